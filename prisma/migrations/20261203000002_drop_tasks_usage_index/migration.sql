-- Replaced by tasks_usage_by_key_idx (previous migration), which serves the same query and
-- groups by key too; one index less to write on every task insert and status change.
-- CONCURRENTLY, alone in its file: no lock that would block reads or writes of `tasks`.
DROP INDEX CONCURRENTLY IF EXISTS "tasks_usage_idx";
