-- An attempt number is claimed (a row with in_flight = true) before the webhook is sent, and the
-- row is completed with the result afterwards: an attempt whose result could not be recorded (the
-- database was unreachable, the dispatcher died) keeps its number and is never sent again as a
-- new attempt. Rows written by dispatchers that predate this column are complete, hence the
-- default. A constant default adds the column without rewriting the table.

-- AlterTable
ALTER TABLE "webhook_attempts" ADD COLUMN "in_flight" BOOLEAN NOT NULL DEFAULT false;
