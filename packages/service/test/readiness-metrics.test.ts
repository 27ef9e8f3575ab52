// The readiness gauges on a real Redis behind a relay the test cuts: each scrape runs the checks
// once for both gauges and reports the backend as it is now, down while cut, up once back.
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { startTcpRelay, TEST_REDIS_URL, waitFor, type TcpRelay } from '@taskapi/testing';
import { registerReadinessMetrics } from '../src/readiness-metrics';

describe('registerReadinessMetrics', () => {
  let relay: TcpRelay;
  let redis: Redis;

  beforeAll(async () => {
    const target = new URL(TEST_REDIS_URL);
    relay = await startTcpRelay(target.hostname, Number(target.port || 6379));
    redis = new Redis(`redis://127.0.0.1:${relay.port}`, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000, retryStrategy: () => 50 });
    redis.on('error', () => undefined); // expected while the relay is cut; the gauges report it
    await waitFor(() => redis.status === 'ready', { what: 'redis through the relay' });
  });

  afterAll(async () => {
    redis?.disconnect();
    await relay?.close();
  });

  it('reports each check and the overall readiness at every scrape, running the checks once per scrape', async () => {
    const registry = new Registry();
    let runs = 0;
    registerReadinessMetrics(registry, 'worker', {
      redis: () => {
        runs++;
        return redis.ping();
      },
      storage: async () => undefined,
    });
    const scrape = async () => {
      const text = await registry.metrics();
      const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
      return {
        ready: value('taskapi_ready{service="worker"}'),
        redis: value('taskapi_backend_up{service="worker",backend="redis"}'),
        storage: value('taskapi_backend_up{service="worker",backend="storage"}'),
      };
    };

    expect(await scrape()).toEqual({ ready: 1, redis: 1, storage: 1 });
    expect(runs).toBe(1);

    relay.cut('refuse');
    expect(await waitFor(async () => ((await scrape()).redis === 0 ? scrape() : undefined), { what: 'redis reported down' })).toEqual({ ready: 0, redis: 0, storage: 1 });

    relay.restore();
    await waitFor(async () => (await scrape()).ready === 1, { what: 'redis reported up again' });
    expect(await scrape()).toEqual({ ready: 1, redis: 1, storage: 1 });
  });
});
