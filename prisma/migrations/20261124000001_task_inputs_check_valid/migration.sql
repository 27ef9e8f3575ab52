-- Checks the existing rows against task_inputs_bytes_somewhere, taking only a SHARE UPDATE EXCLUSIVE
-- lock (reads and writes go on), in a migration of its own.
ALTER TABLE "task_inputs" VALIDATE CONSTRAINT "task_inputs_bytes_somewhere";
