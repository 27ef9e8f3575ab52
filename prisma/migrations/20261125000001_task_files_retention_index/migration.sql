-- What the retention job looks for, oldest first; rows leave the index once their files are gone.
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of a large `tasks` table.
CREATE INDEX CONCURRENTLY "tasks_retention_idx" ON "tasks"("finished_at") WHERE (status IN (20, 30, 40) AND files_expired_at IS NULL);
