// The ceiling of one BullMQ job per delivery on this machine: a process whose worker does nothing
// with its jobs, fed and drained exactly as the dispatcher is in its rounds (N jobs of the same
// shape in one addBulk to a running worker of the same concurrency, timed to the last one done).
// Run by dispatcher-figures.ts in its own process; prints one JSON line: {"jobsPerSecond","cpuMsPerJob"}.
// Usage: tsx bench/bullmq-floor.ts <redis url> <jobs> <concurrency>
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { WEBHOOK_QUEUE } from '@taskapi/queue';

async function main(): Promise<void> {
  const [url, jobsArg, concurrencyArg] = process.argv.slice(2);
  const jobs = Number(jobsArg);
  const concurrency = Number(concurrencyArg);
  const name = `{bench-floor-${process.pid}}`;
  const connection = new Redis(url!, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(url!, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection, defaultJobOptions: WEBHOOK_QUEUE.defaultJobOptions });
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((resolve) => (finish = resolve));
  const worker = new Worker(
    name,
    async () => ({ outcome: 'succeeded', status_code: 204 }),
    { connection: workerConnection, concurrency },
  );
  // Done when the last job is completed (moved to the completed set), as a delivery is.
  worker.on('completed', () => {
    if (++done === jobs) finish();
  });
  await worker.waitUntilReady();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'deliver', data: { delivery_id: `whd_floor${i}`, attempt: 1, account_id: 'acct_floor' }, opts: { jobId: `floor-${i}` } })));
  await all;
  const ms = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${JSON.stringify({ jobsPerSecond: (1000 * jobs) / ms, cpuMsPerJob: (used.user + used.system) / 1000 / jobs })}\n`);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  workerConnection.disconnect();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
