-- Replaced by webhook_deliveries_due_idx (previous migration), which no per-delivery statement can use.
-- CONCURRENTLY, alone in its file: no lock that would block reads or writes of `webhook_deliveries`.
DROP INDEX CONCURRENTLY IF EXISTS "webhook_deliveries_pending_idx";
