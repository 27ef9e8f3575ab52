-- The expiry sweep's view (every API replica and worker, twice a second): queued tasks with a
-- deadline that never started, soonest first. `status = 0`: per-task statements say
-- `status IN (0, 10)`, which does not imply it, so the planner cannot mistake this index for theirs
-- (test/db/hot-statement-plans.test.ts).
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of a large `tasks` table.
CREATE INDEX CONCURRENTLY "tasks_expiry_idx" ON "tasks" ("expires_at") WHERE status = 0 AND expires_at IS NOT NULL AND started_at IS NULL;
