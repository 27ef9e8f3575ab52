// A service gives back the memory a busy period grew it by, once it has gone quiet: the API as
// users start it (`npm run start:api`), busy with many large answers at once, then idle.
import { Pool } from 'undici';
import { freePort, waitFor } from '@taskapi/testing';
import { flushRedis, redisUrl, startChild, systemEnv, type ChildService } from './support/system';

const REDIS_DB = 1;

let api: ChildService | undefined;

afterAll(async () => {
  await api?.stop();
});

it('the API releases memory after a busy period, once its event loop has been idle for MEMORY_RELEASE_IDLE_MS', async () => {
  await flushRedis(redisUrl(REDIS_DB));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  api = await startChild('api', systemEnv(REDIS_DB, { HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: base, MEMORY_RELEASE_IDLE_MS: '2000' }), 'api listening');
  const released = () => api!.logs.filter((l) => l.message === 'idle: memory released');

  // Busy: the OpenAPI document (hundreds of kB each) to 32 concurrent clients.
  const pool = new Pool(base, { connections: 32 });
  try {
    for (let round = 0; round < 12; round++) {
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          const res = await pool.request({ path: '/api/openapi.json', method: 'GET' });
          await res.body.arrayBuffer();
          expect(res.statusCode).toBe(200);
        }),
      );
    }
  } finally {
    await pool.close();
  }

  const [line] = await waitFor(() => (released().length ? released() : undefined), { timeoutMs: 30_000, what: 'the "idle: memory released" line' });
  expect(line).toEqual(expect.objectContaining({ level: 'info', service: 'api', rss_before_mb: expect.any(Number), rss_after_mb: expect.any(Number), took_ms: expect.any(Number) }));
  expect(line!.rss_after_mb as number).toBeLessThan((line!.rss_before_mb as number) - 16);
}, 90_000);
