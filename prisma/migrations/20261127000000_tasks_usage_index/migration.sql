-- The console's usage chart (GET /api/console/usage): one account's tasks created since a day,
-- counted by day, kind and status with their cost. Every column the query reads is in the index,
-- so it is an index-only range scan over that account's window (no heap visits once vacuumed),
-- however many tasks the table holds. Status and cost are key columns rather than INCLUDE so that
-- Prisma's schema can declare the index exactly.
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of a large `tasks` table.
CREATE INDEX CONCURRENTLY "tasks_usage_idx" ON "tasks"("account_id", "created_at", "kind", "status", "cost");
