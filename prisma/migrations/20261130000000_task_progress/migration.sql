-- How far a task got (0 to 1), kept once it ends: 1 when it completed, the last reported value when
-- it failed or was cancelled. While a task runs its progress lives in Redis only (a running task
-- costs no PostgreSQL write per step); the terminal transition writes this column once.
-- Nullable without a default: a catalog-only change, no table rewrite; replicas still running the
-- previous release neither read nor write it. The range check is added NOT VALID (no scan under
-- this migration's lock; every existing row is NULL) and validated by the next migration.
ALTER TABLE "tasks" ADD COLUMN "progress" REAL;
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_progress_in_range" CHECK (progress >= 0 AND progress <= 1) NOT VALID;
