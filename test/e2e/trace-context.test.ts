// Tracing as shipped (no OTEL_EXPORTER_OTLP_ENDPOINT): no SDK in any service, yet a task keeps
// the trace of its creation by hand. The API, worker and dispatcher run from dist/ with no
// endpoint; the webhook carries the creation's trace id, as do the attempt row and the logs.
import { startHttpsReceiver, startPrivateRedis, freePort, waitFor, type HttpsReceiver, type PrivateRedis } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey } from '../../services/api/test/support/harness';
import { startChild, startSystem, type ChildService, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('trace context without an exporter endpoint', () => {
  let redis: PrivateRedis;
  let system: TestSystem;
  let receiver: HttpsReceiver;
  let api: ChildService;
  let worker: ChildService;
  let dispatcher: ChildService;
  let apiUrl: string;
  let key: CreatedKey;
  const children: ChildService[] = [];

  beforeAll(async () => {
    redis = await startPrivateRedis();
    receiver = await startHttpsReceiver(() => 204);
    system = await startSystem(0, { REDIS_URL: `${redis.url}/0` });
    const apiPort = await freePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const env = { ...system.env, HOST: '127.0.0.1', OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SDK_DISABLED: 'false' };
    [api, worker, dispatcher] = await Promise.all([
      startChild('api', { ...env, PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl }, 'api listening', 'node'),
      startChild('worker', { ...env, WORKER_KINDS: 'image-generation' }, 'worker started', 'node'),
      startChild('webhook-dispatcher', env, 'webhook dispatcher started', 'node'),
    ]);
    children.push(api, worker, dispatcher);
    const account = await seedAccount(system.api, { credits: 100, label: 'trace-context' });
    key = await createKey(system.api, account, { type: 'paid' });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await receiver?.close();
    await system?.stop();
    await redis?.stop();
  }, 60_000);

  async function create(path: string, headers: Record<string, string>): Promise<string> {
    const res = await fetch(`${apiUrl}/api/tasks/image-generation`, {
      method: 'POST',
      headers: { ...withKey(key), 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ prompt: 'untraced', width: 64, height: 64, callback_url: receiver.url(path) }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { public_id: string }).public_id;
  }

  async function attemptTraceIds(publicId: string): Promise<Array<string | null>> {
    const { rows } = await system.api.deps.db.pool.query<{ trace_id: string | null }>(
      `SELECT a.trace_id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN tasks t ON t.id = d.task_id
        WHERE t.public_id = $1 AND NOT a.in_flight ORDER BY a.attempt_number`,
      [publicId],
    );
    return rows.map((r) => r.trace_id);
  }

  async function delivered(path: string, publicId: string) {
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(20);
    const [hook] = await receiver.waitForCount(path, 1);
    await waitFor(async () => (await attemptTraceIds(publicId)).length === 1, { what: 'the attempt row' });
    return hook!;
  }

  it('the webhook carries the trace of a valid incoming traceparent, with a new span id; the attempt row and the lines carry its id', async () => {
    const publicId = await create('/valid', { traceparent: `00-${TRACE}-${PARENT}-01` });
    const hook = await delivered('/valid', publicId);
    expect(hook.headers.traceparent).toMatch(new RegExp(`^00-${TRACE}-(?!${PARENT})(?!0{16})[0-9a-f]{16}-01$`));
    expect(await attemptTraceIds(publicId)).toEqual([TRACE]);
    const access = await waitFor(() => api.logs.find((l) => l.method === 'POST' && l.public_id === publicId), { what: 'the access line' });
    expect(access.trace_id).toBe(TRACE);
    expect(worker.logs).toContainEqual(expect.objectContaining({ message: 'task started', public_id: publicId, trace_id: TRACE }));
    expect(worker.logs).toContainEqual(expect.objectContaining({ message: 'task completed', public_id: publicId, trace_id: TRACE }));
    await waitFor(() => dispatcher.logs.some((l) => l.message === 'webhook delivered' && l.public_id === publicId), { what: 'the attempt line' });
    expect(dispatcher.logs).toContainEqual(expect.objectContaining({ message: 'webhook delivered', public_id: publicId, trace_id: TRACE }));
  }, 60_000);

  it('an invalid traceparent (all-zero trace id) starts a new trace, sampled (-01: a worker or dispatcher that exports records it), carried alike', async () => {
    const publicId = await create('/invalid', { traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` });
    const hook = await delivered('/invalid', publicId);
    const [traceId] = await attemptTraceIds(publicId);
    expect(traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    expect(hook.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    const access = await waitFor(() => api.logs.find((l) => l.method === 'POST' && l.public_id === publicId), { what: 'the access line' });
    expect(access.trace_id).toBe(traceId);
  }, 60_000);

  it('other requests do no trace work: a read has no trace_id on its access line', async () => {
    const res = await fetch(`${apiUrl}/api/tasks/task_doesnotexist`, { headers: { ...withKey(key), traceparent: `00-${TRACE}-${PARENT}-01` } });
    expect(res.status).toBe(404);
    const access = await waitFor(() => api.logs.find((l) => l.method === 'GET' && l.path === '/api/tasks/task_doesnotexist'), { what: 'the access line' });
    expect(access.trace_id).toBeUndefined();
    expect(res.headers.get('traceparent')).toBeNull();
  });
});
