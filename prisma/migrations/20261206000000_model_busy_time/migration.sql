-- A task's wait on busy model servers (docs/models.md, "A model server that stays busy"): the
-- milliseconds it has waited in all (`model_busy_ms`) and when the present wait began
-- (`model_busy_since`, null when none is going on). Past MODEL_BUSY_TIMEOUT_MS in all the task fails
-- with error_code `model_unavailable` (refunded). A column with a constant default and a nullable one
-- without: catalog-only changes, no rewrite of the table.
ALTER TABLE "tasks" ADD COLUMN "model_busy_ms" BIGINT NOT NULL DEFAULT 0,
                    ADD COLUMN "model_busy_since" TIMESTAMPTZ(3);
