-- GET /api/tasks?fairness_key=: one account's tasks of one key, newest first.
-- CONCURRENTLY, alone in its file: built without blocking reads or writes of a large `tasks` table.
CREATE INDEX CONCURRENTLY "tasks_fairness_key_idx" ON "tasks" ("account_id", "fairness_key", "id" DESC) WHERE fairness_key IS NOT NULL;
