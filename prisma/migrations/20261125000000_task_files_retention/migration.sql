-- Retention (RETENTION_DAYS, DESIGN §11): the worker's retention job deletes the stored inputs and
-- outputs of terminal tasks that finished more than RETENTION_DAYS ago. The row stays, with
-- `files = []` and the time its files went. A nullable column: replicas of the previous release
-- neither read nor write it (expand only).

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN "files_expired_at" TIMESTAMPTZ(3);

-- What the job looks for, oldest first; rows leave the index once their files are gone.
CREATE INDEX "tasks_retention_idx" ON "tasks"("finished_at") WHERE (status IN (20, 30, 40) AND files_expired_at IS NULL);
