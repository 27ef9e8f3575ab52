-- CreateEnum
CREATE TYPE "api_key_type" AS ENUM ('paid', 'trial');

-- CreateEnum
CREATE TYPE "task_kind" AS ENUM ('video-generation', 'image-generation', 'face-detection');

-- CreateEnum
CREATE TYPE "ledger_entry_type" AS ENUM ('topup', 'trial_grant', 'charge', 'refund');

-- CreateEnum
CREATE TYPE "webhook_delivery_state" AS ENUM ('pending', 'succeeded', 'failed');

-- CreateTable
CREATE TABLE "accounts" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "password_hash" TEXT NOT NULL,
    "paid_balance" INTEGER NOT NULL DEFAULT 0,
    "webhook_secret_ciphertext" TEXT NOT NULL,
    "webhook_secret_rotated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trial_grants" (
    "id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "quota_total" INTEGER NOT NULL,
    "quota_remaining" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trial_grants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "type" "api_key_type" NOT NULL,
    "key_hash" CHAR(64) NOT NULL,
    "key_ciphertext" TEXT NOT NULL,
    "key_prefix" VARCHAR(16) NOT NULL,
    "grant_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tasks" (
    "id" BIGSERIAL NOT NULL,
    "public_id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "grant_id" TEXT,
    "kind" "task_kind" NOT NULL,
    "status" SMALLINT NOT NULL DEFAULT 0,
    "error_code" TEXT,
    "input" JSON NOT NULL,
    "payload" JSON,
    "callback_url" TEXT,
    "cost" INTEGER NOT NULL,
    "result" JSON,
    "files" JSONB NOT NULL DEFAULT '[]',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "tasks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "task_inputs" (
    "task_id" BIGINT NOT NULL,
    "content_type" TEXT NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "task_inputs_pkey" PRIMARY KEY ("task_id")
);

-- CreateTable
CREATE TABLE "credit_ledger" (
    "id" BIGSERIAL NOT NULL,
    "account_id" TEXT NOT NULL,
    "grant_id" TEXT,
    "task_id" BIGINT,
    "entry_type" "ledger_entry_type" NOT NULL,
    "amount" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credit_ledger_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "account_id" TEXT NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "task_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("account_id","key")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" TEXT NOT NULL,
    "task_id" BIGINT NOT NULL,
    "account_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "task_status" SMALLINT NOT NULL,
    "state" "webhook_delivery_state" NOT NULL DEFAULT 'pending',
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" TEXT NOT NULL,
    "attempt_number" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "status_code" INTEGER,
    "error" TEXT,
    "response_excerpt" TEXT,

    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key_reveals" (
    "id" BIGSERIAL NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "revealed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ip" TEXT,
    "user_agent" TEXT,

    CONSTRAINT "api_key_reveals_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "accounts_email_key" ON "accounts"("email");

-- CreateIndex
CREATE INDEX "trial_grants_account_id_expires_at_idx" ON "trial_grants"("account_id", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_account_id_created_at_idx" ON "api_keys"("account_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_one_active_key_per_grant" ON "api_keys"("grant_id") WHERE ("revoked_at" IS NULL);

-- CreateIndex
CREATE UNIQUE INDEX "tasks_public_id_key" ON "tasks"("public_id");

-- CreateIndex
CREATE INDEX "tasks_account_id_id_idx" ON "tasks"("account_id", "id" DESC);

-- CreateIndex
CREATE INDEX "tasks_account_id_status_id_idx" ON "tasks"("account_id", "status", "id" DESC);

-- CreateIndex
CREATE INDEX "tasks_account_id_kind_id_idx" ON "tasks"("account_id", "kind", "id" DESC);

-- CreateIndex
CREATE INDEX "tasks_unfinished_idx" ON "tasks"("created_at") WHERE (status IN (0, 10));

-- CreateIndex
CREATE INDEX "credit_ledger_account_id_created_at_idx" ON "credit_ledger"("account_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "credit_ledger_task_id_entry_type_key" ON "credit_ledger"("task_id", "entry_type");

-- CreateIndex
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_task_id_idx" ON "webhook_deliveries"("task_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_account_id_created_at_idx" ON "webhook_deliveries"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries"("next_attempt_at") WHERE (state = 'pending');

-- CreateIndex
CREATE UNIQUE INDEX "webhook_attempts_delivery_id_attempt_number_key" ON "webhook_attempts"("delivery_id", "attempt_number");

-- CreateIndex
CREATE INDEX "api_key_reveals_api_key_id_revealed_at_idx" ON "api_key_reveals"("api_key_id", "revealed_at");

-- AddForeignKey
ALTER TABLE "trial_grants" ADD CONSTRAINT "trial_grants_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_grant_id_fkey" FOREIGN KEY ("grant_id") REFERENCES "trial_grants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_grant_id_fkey" FOREIGN KEY ("grant_id") REFERENCES "trial_grants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "task_inputs" ADD CONSTRAINT "task_inputs_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_grant_id_fkey" FOREIGN KEY ("grant_id") REFERENCES "trial_grants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "tasks"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "tasks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key_reveals" ADD CONSTRAINT "api_key_reveals_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key_reveals" ADD CONSTRAINT "api_key_reveals_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Rules the Prisma schema language cannot express (kept in sync with packages/db/src/sql-only-constraints.ts).
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_paid_balance_non_negative" CHECK ("paid_balance" >= 0);
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_email_lower_case" CHECK ("email" = lower("email"));
ALTER TABLE "trial_grants" ADD CONSTRAINT "trial_grants_quota_total_positive" CHECK ("quota_total" > 0);
ALTER TABLE "trial_grants" ADD CONSTRAINT "trial_grants_quota_remaining_in_range" CHECK ("quota_remaining" >= 0 AND "quota_remaining" <= "quota_total");
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_grant_matches_type" CHECK (("type" = 'trial') = ("grant_id" IS NOT NULL));
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_status_known" CHECK ("status" IN (0, 10, 20, 30, 40));
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_cost_non_negative" CHECK ("cost" >= 0);
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_amount_sign" CHECK (
    ("entry_type" = 'charge' AND "amount" < 0) OR ("entry_type" <> 'charge' AND "amount" > 0)
);
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_task_entries_have_task" CHECK (
    ("entry_type" IN ('charge', 'refund')) = ("task_id" IS NOT NULL)
);
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_task_status_terminal" CHECK ("task_status" IN (20, 30));
