// Which of BullMQ's spans are a task's steps (docs/architecture.md, "Tracing"); the spans a task's
// trace holds end to end are checked in test/e2e/tracing.test.ts. Names as BullMQ makes them:
// `<operation> <queue>` (an added job's also `.<job name>`).
import { SpanKind } from 'bullmq';
import { isTaskStep } from '../src/queue-telemetry';

describe("BullMQ's spans a task's trace keeps", () => {
  it('a job added and run, and a failure, retry or delay of it', () => {
    expect(isTaskStep('add {tasks-image-generation}.image-generation', SpanKind.PRODUCER)).toBe(true);
    expect(isTaskStep('addBulk {tasks-image-generation}', SpanKind.PRODUCER)).toBe(true);
    expect(isTaskStep('process {webhooks}', SpanKind.CONSUMER)).toBe(true);
    for (const op of ['fail', 'retry', 'delay']) expect(isTaskStep(`${op} {tasks-video-generation}`, SpanKind.INTERNAL)).toBe(true);
  });

  it("not a job's completion, nor a worker's or a queue's housekeeping", () => {
    for (const name of ['complete {webhooks}', 'extendLocks {webhooks}', 'moveStalledJobsToWait {tasks-image-generation}', 'startStalledCheckTimer {webhooks}', 'close {webhooks}', 'getNextJob {webhooks}', 'remove {webhooks}', 'failed']) {
      expect([name, isTaskStep(name, SpanKind.INTERNAL)]).toEqual([name, false]);
    }
  });
});
