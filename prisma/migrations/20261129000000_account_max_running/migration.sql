-- Fair scheduling (docs/fair-scheduling.md): an account's own cap of running tasks, set by the
-- operator (`npm run admin -- set-max-running`); NULL means the services' ACCOUNT_MAX_RUNNING.
-- Nullable without a default: a catalog-only change, no table rewrite; replicas still running the
-- previous release neither read nor write it.
ALTER TABLE "accounts" ADD COLUMN "max_running" INTEGER;

-- The scheduler packs caps into its scores: at most 10,000 (packages/scheduler/src/script.ts).
-- Every existing row is NULL, so the check has nothing to reject.
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_max_running_in_range" CHECK (max_running >= 1 AND max_running <= 10000);

-- The workers read every account's own cap about once a second: only the accounts that have one.
CREATE INDEX "accounts_max_running_idx" ON "accounts"("max_running") WHERE (max_running IS NOT NULL);
