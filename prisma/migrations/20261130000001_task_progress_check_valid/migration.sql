-- Checks the existing rows against tasks_progress_in_range, taking only a SHARE UPDATE EXCLUSIVE
-- lock (reads and writes go on), in a migration of its own.
ALTER TABLE "tasks" VALIDATE CONSTRAINT "tasks_progress_in_range";
