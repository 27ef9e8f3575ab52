-- Why a failed task failed, in a sentence its owner can act on (beside `error_code`).
-- Nullable without a default: a catalog-only change, no table rewrite, and replicas still running
-- the previous release neither read nor write it. Older failed tasks keep NULL.
ALTER TABLE "tasks" ADD COLUMN "error_message" TEXT;
