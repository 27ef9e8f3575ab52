// Section 12 of `npm run bench`: creating 100 tasks with one batch request
// (`POST /api/tasks/{kind}/batch`) against 100 single creations, in the same run, interleaved
// rounds. Single creations are sent one at a time (a simple client) and 16 at a time (a client that
// already parallelizes); batches one at a time. Figures are tasks created per second by the client.
import { median } from './stats';

export interface BatchFigures {
  /** Tasks/s, median over rounds. */
  singleSequential: number;
  singleConcurrent: number;
  batch: number;
  /** Milliseconds for one batch request of `size` tasks, median over every batch sent. */
  batchP50Ms: number;
  rounds: Array<{ singleSequential: number; singleConcurrent: number; batch: number }>;
}

const SIZE = 100;
const CONCURRENCY = 16;

async function post(url: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`${url}: ${res.status} ${text.slice(0, 200)}`);
}

/** `sets` × 100 tasks, each set created by `createSet`; tasks per second. */
async function timed(sets: number, createSet: () => Promise<void>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < sets; i++) await createSet();
  return (sets * SIZE) / ((performance.now() - start) / 1000);
}

export async function batchFigures(base: string, key: string, rounds: number, setsPerRound: number): Promise<BatchFigures> {
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const single = `${base}/api/tasks/image-generation`;
  const batchUrl = `${single}/batch`;
  const item = (i: number) => ({ prompt: `bench batch ${i}`, width: 64, height: 64 });
  const itemBody = (i: number) => JSON.stringify(item(i));
  const batchBody = JSON.stringify({ tasks: Array.from({ length: SIZE }, (_, i) => item(i)) });

  const sequential = async () => {
    for (let i = 0; i < SIZE; i++) await post(single, headers, itemBody(i));
  };
  const concurrent = async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SIZE) await post(single, headers, itemBody(next++));
      }),
    );
  };
  const batchTimes: number[] = [];
  const batch = async () => {
    const start = performance.now();
    await post(batchUrl, headers, batchBody);
    batchTimes.push(performance.now() - start);
  };

  // Warm-up: connections, prepared statements, JIT.
  await timed(1, sequential);
  await timed(1, concurrent);
  await timed(2, batch);
  batchTimes.length = 0;

  const out: BatchFigures['rounds'] = [];
  for (let r = 0; r < rounds; r++) {
    out.push({ singleSequential: await timed(setsPerRound, sequential), singleConcurrent: await timed(setsPerRound, concurrent), batch: await timed(setsPerRound, batch) });
  }
  return {
    singleSequential: median(out.map((x) => x.singleSequential)),
    singleConcurrent: median(out.map((x) => x.singleConcurrent)),
    batch: median(out.map((x) => x.batch)),
    batchP50Ms: median(batchTimes),
    rounds: out,
  };
}
