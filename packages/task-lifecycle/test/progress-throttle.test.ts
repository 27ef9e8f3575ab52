// A run's progress writes: none before its first is due (a short run writes none), then at most
// one per interval, always the latest value, never the stored one again.
import { waitFor } from '@taskapi/testing';
import { FIRST_PROGRESS_WRITE_MS, ProgressThrottle } from '../src/progress-throttle';

function recording(intervalMs: number, firstWriteMs?: number) {
  const writes: number[] = [];
  const throttle = new ProgressThrottle(
    async (p) => {
      writes.push(p);
    },
    (err) => {
      throw err;
    },
    intervalMs,
    firstWriteMs,
  );
  return { writes, throttle };
}

it('writes nothing before the first write is due: a run that ends sooner writes none, and keeps the last value for its end', async () => {
  const { writes, throttle } = recording(500, 60_000);
  throttle.report(0.5);
  throttle.report(0.75);
  await throttle.stop();
  expect(writes).toEqual([]);
  expect(throttle.last).toBe(0.75);
});

it('by default, the first write waits a tenth of a second into the run', async () => {
  expect(FIRST_PROGRESS_WRITE_MS).toBe(100);
  const { writes, throttle } = recording(500);
  throttle.report(0.5);
  expect(writes).toEqual([]);
  await waitFor(() => writes.length === 1, { what: 'the first write' });
  expect(writes).toEqual([0.5]);
  await throttle.stop();
});

it('once due, writes at once; then at most one write per interval, always the latest value, never the stored one again', async () => {
  const { writes, throttle } = recording(200, 0);
  throttle.report(0.1);
  expect(writes).toEqual([0.1]);
  throttle.report(0.2);
  throttle.report(0.3);
  expect(writes).toEqual([0.1]);
  await waitFor(() => writes.length === 2, { what: 'the second write' });
  expect(writes).toEqual([0.1, 0.3]);
  expect(writes).toEqual([0.1, 0.3]);
  throttle.report(0.3);
  await throttle.stop();
  expect(writes).toEqual([0.1, 0.3]);
});
