-- Retention (RETENTION_DAYS, docs/operations.md): the worker's retention job deletes the stored inputs and
-- outputs of terminal tasks that finished more than RETENTION_DAYS ago. The row stays, with
-- `files = []` and the time its files went. A nullable column: replicas of the previous release
-- neither read nor write it (expand only).

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN "files_expired_at" TIMESTAMPTZ(3);

-- The index the job reads is built CONCURRENTLY in the next migration (a file of its own, so it
-- runs outside a transaction and never blocks writes to `tasks` while it builds).
