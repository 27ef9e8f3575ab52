// The autoscaling signals (docs/operations.md) on real processes: queue depth and oldest waiting age per
// kind read from a real Redis with real BullMQ jobs (the same on two API replicas), the end-to-end
// histogram where tasks end (API: cancelled; worker: completed), and HTTP route labels that stay
// the declared template for every status.
import { TASK_KINDS } from '@taskapi/task-kinds';
import { parseMetrics, startTcpRelay, testRedisUrl, waitFor, type MetricSample } from '@taskapi/testing';
import { createKey, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestApi } from '../../services/api/test/support/harness';
import { startSystem, startWorker, type RunningService, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const REDIS_DB = 4;

const find = (samples: MetricSample[], name: string, labels: Record<string, string>) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

async function scrape(url: string): Promise<MetricSample[]> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

/** Queue signals of every kind, as one API replica reports them. */
async function queueSignals(api: TestApi) {
  const samples = await scrape(api.url);
  return Object.fromEntries(
    TASK_KINDS.map((kind) => [
      kind,
      {
        depth: find(samples, 'taskapi_queue_depth', { kind })[0]?.value,
        oldest: find(samples, 'taskapi_queue_oldest_waiting_seconds', { kind })[0]?.value,
      },
    ]),
  );
}

describe('autoscaling signals', () => {
  let system: TestSystem;
  let key: CreatedKey;
  let worker: RunningService | undefined;

  beforeAll(async () => {
    system = await startSystem(REDIS_DB, { RATE_LIMIT_TRIAL_PER_MINUTE: '2' });
    const account = await seedAccount(system.api, { credits: 1000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await worker?.stop();
    await system?.stop();
  });

  const create = async (kind: string, body: Record<string, unknown>) => {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  };

  it('report queue depth and the oldest waiting age per kind, the same on every replica, and the e2e time where tasks end', async () => {
    const { api } = system;
    const images = await Promise.all([1, 2, 3].map((i) => create('image-generation', { prompt: `queued ${i}`, width: 64, height: 64 })));
    // A face-detection job enqueued 90 s ago that nobody has picked up yet.
    const faceQueue = api.deps.taskQueues.queues['face-detection'];
    await faceQueue.add('face-detection', { public_id: 'task_00000000000000000000000000' }, { jobId: 'task_00000000000000000000000000', timestamp: Date.now() - 90_000 });

    const signals = await waitFor(async () => {
      const s = await queueSignals(api);
      return s['image-generation']!.depth === 3 ? s : undefined;
    }, { timeoutMs: 10_000, what: 'three image-generation jobs in the depth gauge' });
    expect(signals['face-detection']!.depth).toBe(1);
    expect(signals['face-detection']!.oldest).toBeGreaterThanOrEqual(90);
    expect(signals['face-detection']!.oldest).toBeLessThan(120);
    expect(signals['image-generation']!.oldest).toBeGreaterThanOrEqual(0);
    expect(signals['image-generation']!.oldest).toBeLessThan(30);
    for (const kind of TASK_KINDS.filter((k) => k !== 'image-generation' && k !== 'face-detection')) {
      expect([kind, signals[kind]]).toEqual([kind, { depth: 0, oldest: 0 }]);
    }

    // A second replica reads the same queue-wide numbers (Redis's clock, so the ages agree too).
    const replica = await startApi(system.env);
    try {
      const other = await queueSignals(replica);
      for (const kind of TASK_KINDS) {
        expect(other[kind]!.depth).toBe(signals[kind]!.depth);
        expect(Math.abs(other[kind]!.oldest! - signals[kind]!.oldest!)).toBeLessThan(10);
      }
    } finally {
      await replica.close();
    }

    // Cancelled by the API: its end-to-end time is observed there, and its job leaves the queue.
    const cancelled = await api.req('POST', `/api/tasks/${images[0]}/cancel`, { headers: withKey(key) });
    expect(cancelled.status).toBe(200);
    const apiSamples = await scrape(api.url);
    expect(find(apiSamples, 'taskapi_task_e2e_seconds_count', { kind: 'image-generation', status: 'cancelled' })[0]?.value).toBe(1);
    expect(find(apiSamples, 'taskapi_queue_depth', { kind: 'image-generation' })[0]?.value).toBe(2);

    // Completed by the worker: observed on the worker's ops /metrics, and the queues drain to 0.
    worker = await startWorker({ ...system.env, OPS_PORT: '0', HOST: '127.0.0.1', WORKER_KINDS: 'image-generation,face-detection' });
    for (const id of images.slice(1)) expect((await waitForTask(api, key.plaintext, id)).status).toBe(20);
    const workerSamples = await scrape(worker.opsUrl!);
    const completed = find(workerSamples, 'taskapi_task_e2e_seconds_count', { kind: 'image-generation', status: 'completed' })[0];
    expect(completed?.value).toBe(2);
    expect(find(workerSamples, 'taskapi_task_e2e_seconds_sum', { kind: 'image-generation', status: 'completed' })[0]?.value).toBeGreaterThan(0);
    // The job of an unknown task is skipped, not a terminal transition: nothing observed for it.
    expect(find(workerSamples, 'taskapi_task_e2e_seconds_count', { kind: 'face-detection' })).toEqual([]);
    await waitFor(async () => {
      const s = await queueSignals(api);
      return TASK_KINDS.every((k) => s[k]!.depth === 0 && s[k]!.oldest === 0);
    }, { timeoutMs: 10_000, what: 'every queue to drain' });
  });

  it('label HTTP metrics by the declared route template for every status, and unknown paths as unmatched', async () => {
    const { api } = system;
    const account = await seedAccount(api, { credits: 0 });
    const trial = await createKey(api, account, { type: 'trial', grant_id: await seedGrant(api, account, 100) });
    const body = { prompt: 'label', width: 64, height: 64 };
    const statuses = [
      (await api.req('POST', '/api/tasks/image-generation', { body })).status,
      (await api.req('POST', '/api/tasks/image-generation', { headers: withKey(trial), body })).status,
      (await api.req('POST', '/api/tasks/image-generation', { headers: withKey(trial), body: { prompt: '' } })).status,
      (await api.req('POST', '/api/tasks/image-generation', { headers: withKey(trial), body })).status,
    ];
    expect(statuses).toEqual([401, 201, 400, 429]);
    const id = await create('image-generation', body);
    expect((await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) })).status).toBe(200);
    expect((await api.req('GET', `/api/tasks/${id}`)).status).toBe(401);
    expect((await api.req('GET', '/api/tasks/task_doesnotexist0000000000000', { headers: withKey(key) })).status).toBe(404);
    expect((await api.req('GET', '/nowhere/at/all')).status).toBe(404);
    expect((await api.req('GET', '/api/tasks/no/such/thing')).status).toBe(401);

    const res = await fetch(`${api.url}/metrics`);
    const text = await res.text();
    const samples = parseMetrics(text).filter((s) => s.name === 'taskapi_http_requests_total');
    // Routes of the task API (the console's login and key creation answer 200 and 201 too).
    const routesOf = (method: string, status: string) =>
      samples
        .filter((s) => s.labels.method === method && s.labels.status === status)
        .map((s) => s.labels.route!)
        .filter((route) => route.startsWith('/api/tasks') || route === 'unmatched');
    for (const status of ['201', '400', '401', '429']) expect([status, routesOf('POST', status)]).toEqual([status, ['/api/tasks/image-generation']]);
    expect(routesOf('GET', '200')).toEqual(['/api/tasks/{publicId}']);
    expect(routesOf('GET', '404').sort()).toEqual(['/api/tasks/{publicId}', 'unmatched']);
    expect(routesOf('GET', '401').sort()).toEqual(['/api/tasks/{publicId}', 'unmatched']);
    // No raw path, id or unknown segment ever becomes a label.
    for (const leaked of ['/nowhere', 'no/such/thing', id, 'route="/image-generation"']) expect([leaked, text.includes(leaked)]).toEqual([leaked, false]);
    const durations = parseMetrics(text).filter((s) => s.name === 'taskapi_http_request_duration_seconds_count');
    expect(new Set(durations.map((s) => s.labels.route))).toEqual(new Set(samples.map((s) => s.labels.route)));
  });

  it('answer a scrape while Redis is unreachable, leaving the queue gauges out rather than failing', async () => {
    const target = new URL(testRedisUrl(REDIS_DB));
    const relay = await startTcpRelay(target.hostname, Number(target.port || 6379));
    const viaRelay = await startApi({ ...system.env, REDIS_URL: `redis://127.0.0.1:${relay.port}${target.pathname}` });
    try {
      const before = await scrape(viaRelay.url);
      expect(find(before, 'taskapi_queue_depth', {}).length).toBe(TASK_KINDS.length);
      relay.cut();
      const during = await scrape(viaRelay.url);
      expect(find(during, 'taskapi_queue_depth', {})).toEqual([]);
      expect(find(during, 'taskapi_queue_oldest_waiting_seconds', {})).toEqual([]);
      expect(find(during, 'taskapi_http_requests_total', { route: '/metrics' }).length).toBeGreaterThan(0);
      relay.restore();
      await waitFor(async () => find(await scrape(viaRelay.url), 'taskapi_queue_depth', {}).length === TASK_KINDS.length, {
        timeoutMs: 10_000,
        what: 'the queue gauges to return with Redis',
      });
    } finally {
      await viaRelay.close();
      await relay.close();
    }
  });
});

