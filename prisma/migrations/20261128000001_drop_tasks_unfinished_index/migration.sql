-- Replaced by tasks_not_finished_idx (previous migration), which no per-task statement can use.
-- CONCURRENTLY, alone in its file: no lock that would block reads or writes of `tasks`.
DROP INDEX CONCURRENTLY IF EXISTS "tasks_unfinished_idx";
