-- The delivery sweeper's view of pending deliveries by due time, replacing
-- webhook_deliveries_pending_idx (WHERE state = 'pending'). The dispatcher's per-delivery
-- statements (claim an attempt, record its result) filter on state = 'pending' as well, so with
-- statistics older than a backlog of pending deliveries (a receiver down for a while) the planner
-- could walk that index with a filter on the delivery id instead of the primary key, reading every
-- pending delivery for each attempt. next_attempt_at is set exactly while a delivery is pending
-- (record-attempt.ts, finish-task.ts, the console's resend), and no per-delivery statement filters
-- on it, so this predicate selects the same rows and can only serve the sweeper.
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of `webhook_deliveries`.
CREATE INDEX CONCURRENTLY "webhook_deliveries_due_idx" ON "webhook_deliveries"("next_attempt_at") WHERE (next_attempt_at IS NOT NULL);
