// A service gives back the memory a busy period grew it by, once it has gone quiet: the API as
// users start it (`npm run start:api`), busy with many large task-creation bodies at once until it
// has grown, then idle. What is asserted is the mechanism, on every Node: once idle, the API runs
// its memory-reducing collection (and logs it, with the sizes). How much comes back depends on the
// garbage collector of the Node it runs on (V8 13, Node 24: hundreds of MB; Node 20's V8 keeps its
// page pool): that is a figure, measured by `npm run bench` (docs/performance.md), not a test.
import fs from 'node:fs';
import { Pool } from 'undici';
import { RELEASE_MIN_GROWTH_BYTES } from '../../packages/service/src/idle-memory';
import { commandLine, freePort, waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi } from '../../services/api/test/support/harness';
import { flushRedis, redisUrl, startChild, systemEnv, type ChildService } from './support/system';

const REDIS_DB = 1;
const MB = 1024 * 1024;
/** Growth the load must cause: well above the release's own 32 MB threshold. */
const GROWTH = 64 * MB;

let api: ChildService | undefined;

afterAll(async () => {
  await api?.stop();
});

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;

it('the API releases memory after a busy period, once its event loop has been idle for MEMORY_RELEASE_IDLE_MS', async () => {
  await flushRedis(redisUrl(REDIS_DB));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = systemEnv(REDIS_DB, { RATE_LIMIT_PAID_PER_MINUTE: '1000000', RATE_LIMIT_PAID_PER_DAY: '1000000' });
  // A paid key, made through an API of this process on the same database.
  const seeder = await startApi(env);
  const key = await createKey(seeder, await seedAccount(seeder), { type: 'paid' }).finally(() => seeder.close());
  api = await startChild('api', { ...env, HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: base, MEMORY_RELEASE_IDLE_MS: '2000', LOG_LEVEL: 'debug' }, 'api listening');
  const node = api.pids.find((pid) => commandLine(pid).includes('dist/api.js'));
  expect(node).toBeDefined();
  // A release that gave memory back is logged at info; one whose collection freed under 1 MB of
  // resident memory (an older V8, or V8 shrank by itself first) at debug.
  const collections = () => api!.logs.filter((l) => l.message === 'idle: memory released' || l.message === 'idle: collected, nothing released');
  const started = rssOf(node!);

  // Busy until it has grown: creation requests with 40 kB payloads of small objects, 64 at a time,
  // each parsed, kept as text and validated, then refused (an empty prompt: no task, no charge).
  const body = JSON.stringify({ prompt: '', payload: Array.from({ length: 2_000 }, (_, i) => ({ n: i, s: 'memory' })) });
  const pool = new Pool(base, { connections: 64 });
  try {
    await waitFor(
      async () => {
        await Promise.all(
          Array.from({ length: 64 }, async () => {
            const res = await pool.request({
              path: '/api/tasks/image-generation',
              method: 'POST',
              headers: { 'x-api-key': key.plaintext, 'content-type': 'application/json' },
              body,
            });
            await res.body.arrayBuffer();
            expect(res.statusCode).toBe(400);
          }),
        );
        return rssOf(node!) >= started + GROWTH;
      },
      { timeoutMs: 60_000, intervalMs: 0, what: `the API to grow by ${GROWTH / MB} MB` },
    );
  } finally {
    await pool.close();
  }

  // Quiet now: within MEMORY_RELEASE_IDLE_MS (2 s) and a sampling interval, one collection, unless
  // V8 has already shrunk the process below the release's threshold by itself (then there is
  // nothing to release).
  await waitFor(() => collections().length > 0 || rssOf(node!) < started + RELEASE_MIN_GROWTH_BYTES, {
    timeoutMs: 30_000,
    intervalMs: 250,
    what: 'the idle collection',
  });
  for (const line of collections()) {
    expect(line).toEqual(expect.objectContaining({ service: 'api', rss_before_mb: expect.any(Number), rss_after_mb: expect.any(Number), took_ms: expect.any(Number) }));
    if (line.message === 'idle: memory released') expect(line.rss_after_mb as number).toBeLessThan(line.rss_before_mb as number);
  }
}, 120_000);
