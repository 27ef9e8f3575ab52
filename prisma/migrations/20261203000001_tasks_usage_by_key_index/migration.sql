-- The usage query (GET /api/usage and the console's charts, services/api/src/domain/usage.ts): one
-- account's tasks created in a range of UTC days, counted by day, kind, status and key, with their
-- cost. Every column the query reads is in the index, so it stays an index-only range scan over
-- that account's range (no heap visits once vacuumed) however many tasks the table holds; the
-- previous index (tasks_usage_idx) lacked api_key_id, which grouping by key needs. Plan and
-- timings on a million tasks: docs/api.md, "Usage".
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of a large `tasks` table.
CREATE INDEX CONCURRENTLY "tasks_usage_by_key_idx" ON "tasks"("account_id", "created_at", "kind", "status", "api_key_id", "cost");
