-- Checks the existing rows against the steering fields' constraints (all NULL before this release),
-- taking only a SHARE UPDATE EXCLUSIVE lock (reads and writes go on), in a migration of its own.
ALTER TABLE "tasks" VALIDATE CONSTRAINT "tasks_priority_in_range";
ALTER TABLE "tasks" VALIDATE CONSTRAINT "tasks_ttl_in_range";
ALTER TABLE "tasks" VALIDATE CONSTRAINT "tasks_fairness_key_format";
