// Tracing end to end: the API, the worker and the dispatcher run from dist/ as their own processes
// (the instrumentations patch modules as they are required, which jest's module loader bypasses)
// and export to a collector in this test (OTLP/HTTP, JSON as shipped; protobuf in one test). One trace per task, from the
// creation request to each webhook attempt, through retries and a worker killed mid-task; what
// starts a trace (writes, not reads, probes or scrapes, unless the caller's traceparent is
// sampled), command spans only when asked for, and a task traced by hand (an API without an
// endpoint) recorded by the services that export, its Cog requests carrying its traceparent.
import { randomBytes } from 'node:crypto';
import { predictionId } from '@taskapi/domain';
import {
  freePort,
  startHttpsReceiver,
  startOtlpReceiver,
  startPrivateRedis,
  waitFor,
  type HttpsReceiver,
  type OtlpReceiver,
  type PrivateRedis,
  type ReceivedRequest,
  type ReceivedSpan,
  type ReceiverReply,
} from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startHeldCogServer, type HeldCogServer } from './support/held-model';
import { startChild, startSystem, type ChildService, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** A caller's `traceparent`, sampled (`01`) or not (`00`), in a new trace. */
const callerTrace = (flags: '00' | '01') => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-${flags}` };
};

/** The database a command span names (pg: `postgresql`, ioredis: `redis`), under either semantic convention. */
const dbSystem = (s: ReceivedSpan) => s.attributes['db.system.name'] ?? s.attributes['db.system'];

describe('a task traced end to end', () => {
  let redis: PrivateRedis;
  let system: TestSystem;
  let collector: OtlpReceiver;
  let receiver: HttpsReceiver;
  let cog: HeldCogServer;
  let api: ChildService;
  let dispatcher: ChildService;
  let apiUrl: string;
  let key: CreatedKey;
  let account: TestAccount;
  let serviceEnv: Record<string, string>;
  const children: ChildService[] = [];
  const workers: ChildService[] = [];
  const scripts = new Map<string, (nth: number) => ReceiverReply>();

  beforeAll(async () => {
    // A Redis server of this file's own: databases 1-14 of the run's are the other files'.
    [redis, collector, cog] = await Promise.all([startPrivateRedis(), startOtlpReceiver(), startHeldCogServer({ concurrency: 4 })]);
    receiver = await startHttpsReceiver((req: ReceivedRequest, nth) => scripts.get(req.path)?.(nth) ?? 204);
    system = await startSystem(0, {
      REDIS_URL: `${redis.url}/0`,
      WEBHOOK_RETRY_DELAYS_MS: '300,300,300,300,300',
      WORKER_LOCK_DURATION_MS: '1000',
      RATE_LIMIT_PAID_PER_MINUTE: '100000',
    });
    const apiPort = await freePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    serviceEnv = { ...system.env, HOST: '127.0.0.1', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    [api, dispatcher] = await Promise.all([
      startChild('api', { ...serviceEnv, PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl }, 'api listening', 'node'),
      startChild('webhook-dispatcher', serviceEnv, 'webhook dispatcher started', 'node'),
    ]);
    children.push(api, dispatcher);
    account = await seedAccount(system.api, { credits: 1000, label: 'tracing' });
    key = await createKey(system.api, account, { type: 'paid' });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await Promise.all([receiver?.close(), collector?.close(), cog?.close()]);
    await system?.stop();
    await redis?.stop();
  }, 60_000);

  // A worker left by a failed test would take the next test's task.
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => (w.child.exitCode === null && w.child.signalCode === null ? w.kill('SIGKILL') : undefined)));
  });

  async function worker(extra: Record<string, string> = {}): Promise<ChildService> {
    const child = await startChild(
      'worker',
      { ...serviceEnv, WORKER_KINDS: 'image-generation,video-generation', ENGINE_VIDEO: 'cog', COG_URL_VIDEO: cog.url, COG_MAX_CONCURRENCY_VIDEO: '4', COG_WEBHOOK_BASE_URL: apiUrl, ...extra },
      'worker started',
      'node',
    );
    children.push(child);
    workers.push(child);
    return child;
  }

  async function create(kind: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${apiUrl}/api/tasks/${kind}`, { method: 'POST', headers: { ...withKey(key), 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  }

  async function created(kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await create(kind, body);
    expect(res.status).toBe(201);
    return ((await res.json()) as { public_id: string }).public_id;
  }

  /** The API's access line of the creation of `publicId`. */
  const accessLine = (publicId: string) =>
    waitFor(() => api.logs.find((l) => l.method === 'POST' && l.public_id === publicId && l.status === 201), { what: `the access line of ${publicId}` });

  /** `webhook_attempts.trace_id` of the task's finished attempts. */
  async function attemptTraceIds(publicId: string): Promise<Array<string | null>> {
    const { rows } = await system.api.deps.db.pool.query<{ trace_id: string | null }>(
      `SELECT a.trace_id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN tasks t ON t.id = d.task_id
        WHERE t.public_id = $1 AND NOT a.in_flight ORDER BY a.attempt_number`,
      [publicId],
    );
    return rows.map((r) => r.trace_id);
  }

  /** Span ids from `span` up to its trace's root (those the collector has). */
  function ancestors(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const chain: ReceivedSpan[] = [];
    for (let s = byId.get(span.parentSpanId); s; s = byId.get(s.parentSpanId)) chain.push(s);
    return chain;
  }

  const tree = (spans: ReceivedSpan[]) =>
    spans
      .map((s) => `${s.service}/${s.resource['process.pid']} ${s.kind} ${s.name} ${s.spanId} <- ${s.parentSpanId || '(root)'}${s.links.length ? ` links ${s.links.map((l) => l.spanId)}` : ''}`)
      .join('\n');

  it('one trace from the creation request to the webhook attempt: the API root, the run and the attempt under it', async () => {
    const running = await worker();
    const publicId = await created('image-generation', { prompt: 'traced', width: 64, height: 64, callback_url: receiver.url('/hooks') });
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(20);
    const [hook] = await receiver.waitForCount('/hooks', 1);
    const traceId = (await accessLine(publicId)).trace_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    // The receiver got the attempt's traceparent, in the task's trace.
    expect(hook!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await waitFor(async () => (await attemptTraceIds(publicId)).length === 1, { what: 'the attempt row' });
    expect(await attemptTraceIds(publicId)).toEqual([traceId]);
    // The delivery log (console and API) shows it.
    const log = await system.api.req('GET', `/api/webhook-deliveries?public_id=${publicId}`, { headers: account.auth });
    expect(log.body.data[0].attempts).toEqual([expect.objectContaining({ status_code: 204, trace_id: traceId })]);
    expect(running.logs).toContainEqual(expect.objectContaining({ message: 'task started', public_id: publicId, trace_id: traceId }));
    expect(dispatcher.logs).toContainEqual(expect.objectContaining({ message: 'webhook delivered', public_id: publicId, trace_id: traceId }));

    const expected = ['POST /api/tasks/image-generation', 'send {tasks-image-generation}', 'run image-generation', 'send {webhooks}', 'deliver webhook', 'webhook attempt'];
    const spans = await collector.waitForTrace(traceId, (s) => expected.every((name) => s.some((x) => x.name === name)));
    const info = `\n${tree(spans)}`;
    const roots = spans.filter((s) => s.parentSpanId === '');
    expect([roots.length, info]).toEqual([1, info]);
    const root = roots[0]!;
    expect(root).toMatchObject({ service: 'api', kind: KIND.server, name: 'POST /api/tasks/image-generation' });
    expect(root.attributes).toMatchObject({ 'http.route': '/api/tasks/image-generation', 'http.request.method': 'POST', 'http.response.status_code': 201, 'url.path': '/api/tasks/image-generation' });
    // Every span the collector has hangs from the root: no orphans, a single trace.
    for (const s of spans) if (s !== root) expect([s.name, ancestors(spans, s).at(-1)?.spanId]).toEqual([s.name, root.spanId]);

    // PostgreSQL and Redis command spans are opt-in (OTEL_NODE_ENABLED_INSTRUMENTATIONS).
    expect([spans.filter((s) => dbSystem(s) !== undefined).map((s) => s.name), info]).toEqual([[], info]);
    const one = (name: string) => {
      const found = spans.filter((s) => s.name === name);
      expect([name, found.length, info]).toEqual([name, 1, info]);
      return found[0]!;
    };
    const taskJob = one('send {tasks-image-generation}');
    const run = one('run image-generation');
    const webhookJob = one('send {webhooks}');
    const delivery = one('deliver webhook');
    const attempt = one('webhook attempt');
    const messaging = (operation: string, queue: string, jobId: string) =>
      expect.objectContaining({ 'messaging.system': 'bullmq', 'messaging.operation.type': operation, 'messaging.destination.name': queue, 'messaging.message.id': jobId });
    // Each job: a producer span where it is added, a consumer span where it is run (the task's
    // run, the webhook's delivery), all in the task's trace.
    expect(taskJob).toMatchObject({ service: 'api', kind: KIND.producer, parentSpanId: root.spanId, attributes: messaging('send', '{tasks-image-generation}', publicId) });
    expect(run).toMatchObject({
      service: 'worker',
      kind: KIND.consumer,
      parentSpanId: root.spanId,
      attributes: messaging('process', '{tasks-image-generation}', publicId),
    });
    expect(run.attributes).toMatchObject({ 'taskapi.task.id': publicId, 'taskapi.task.attempt': 1 });
    const webhookJobId = String(webhookJob.attributes['messaging.message.id']);
    expect(webhookJob).toMatchObject({ service: 'worker', kind: KIND.producer, parentSpanId: run.spanId, attributes: messaging('send', '{webhooks}', webhookJobId) });
    expect(delivery).toMatchObject({ service: 'webhook-dispatcher', kind: KIND.consumer, parentSpanId: root.spanId, attributes: messaging('process', '{webhooks}', webhookJobId) });
    expect(delivery.attributes).toMatchObject({ 'taskapi.task.id': publicId, 'taskapi.webhook.attempt': 1 });
    expect(attempt).toMatchObject({ service: 'webhook-dispatcher', kind: KIND.client, parentSpanId: delivery.spanId, attributes: expect.objectContaining({ 'http.response.status_code': 204 }) });
    expect(hook!.headers.traceparent).toBe(`00-${traceId}-${attempt.spanId}-01`);
    // The task's steps only: no span of BullMQ's own (the `telemetry` option is not used).
    const names = (service: string) => spans.filter((s) => s.service === service).map((s) => s.name).sort();
    expect([names('api'), names('worker'), names('webhook-dispatcher'), info]).toEqual([
      ['POST /api/tasks/image-generation', 'send {tasks-image-generation}'],
      ['run image-generation', 'send {webhooks}'],
      ['deliver webhook', 'webhook attempt'],
      info,
    ]);

    // A resend from the console: its job is sent in the resend request's trace, the delivery that
    // runs it (attempt 2) is in the task's.
    const resend = await fetch(`${apiUrl}/api/webhook-deliveries/${log.body.data[0].id}/resend`, { method: 'POST', headers: account.auth });
    expect(resend.status).toBe(202);
    const resendLine = await waitFor(() => api.logs.find((l) => l.method === 'POST' && String(l.path).endsWith('/resend') && l.status === 202), { what: 'the access line of the resend' });
    const resendTrace = resendLine.trace_id as string;
    const ofResend = await collector.waitForTrace(resendTrace, (s) => s.some((x) => x.name === 'send {webhooks}'));
    const resendRoot = ofResend.find((s) => s.parentSpanId === '')!;
    expect([resendRoot.name, ofResend.find((s) => s.name === 'send {webhooks}')!.parentSpanId, `\n${tree(ofResend)}`]).toEqual([
      'POST /api/webhook-deliveries/{deliveryId}/resend',
      resendRoot.spanId,
      `\n${tree(ofResend)}`,
    ]);
    await receiver.waitForCount('/hooks', 2);
    const again = await collector.waitForTrace(traceId, (s) => s.filter((x) => x.name === 'deliver webhook').length === 2);
    const second = again.filter((s) => s.name === 'deliver webhook').find((s) => s.attributes['taskapi.webhook.attempt'] === 2);
    expect([second?.parentSpanId, `\n${tree(again)}`]).toEqual([root.spanId, `\n${tree(again)}`]);
    await running.stop();
  }, 60_000);

  it('a webhook retry and a worker killed mid-task: both runs and both attempts in the task\'s trace', async () => {
    scripts.set('/retry', (nth) => (nth === 1 ? 500 : 204));
    const first = await worker();
    const publicId = await created('video-generation', { prompt: 'traced crash', duration_seconds: 1, callback_url: receiver.url('/retry') });
    const id = predictionId(publicId, 1);
    await cog.waitForHeld(id);
    const traceId = (await accessLine(publicId)).trace_id as string;
    // The model server got the run's traceparent (the undici instrumentation's request span).
    expect(cog.predictions().find((p) => p.id === id)?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // What the first run did before the kill (its request to the model server) reached the
    // collector; its own span never ends, so it is never exported.
    const firstPid = first.child.pid!;
    await collector.waitForTrace(traceId, (s) => s.some((x) => x.service === 'worker' && x.resource['process.pid'] === firstPid && x.kind === KIND.client));
    await first.kill('SIGKILL');
    const puts = cog.putRequests()[id]!;
    const second = await worker();
    // The dead worker's lock expires; the stalled job runs again and re-attaches to the prediction.
    await waitFor(() => cog.putRequests()[id]! > puts, { what: 'the second run to re-attach' });
    cog.held.release(id);
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(20);
    await waitFor(async () => (await attemptTraceIds(publicId)).length === 2, { what: 'two attempts' });
    expect(await attemptTraceIds(publicId)).toEqual([traceId, traceId]);
    const hooks = receiver.at('/retry');
    expect(hooks.map((h) => h.headers.traceparent)).toEqual([expect.stringContaining(`00-${traceId}-`), expect.stringContaining(`00-${traceId}-`)]);

    const spans = await collector.waitForTrace(
      traceId,
      (s) => s.filter((x) => x.name === 'webhook attempt').length === 2 && s.filter((x) => x.name === 'deliver webhook').length === 2 && s.some((x) => x.name === 'run video-generation'),
    );
    const info = `\n${tree(spans)}`;
    const root = spans.find((s) => s.parentSpanId === '')!;
    expect([root?.service, root?.name, info]).toEqual(['api', 'POST /api/tasks/video-generation', info]);
    const workerPids = new Set(spans.filter((s) => s.service === 'worker').map((s) => s.resource['process.pid']));
    expect([workerPids, info]).toEqual([new Set([firstPid, second.child.pid!]), info]);
    const run = spans.find((s) => s.name === 'run video-generation')!;
    expect(run.resource['process.pid']).toBe(second.child.pid);
    expect(ancestors(spans, run).at(-1)).toBe(root);
    const attempts = spans.filter((s) => s.name === 'webhook attempt').sort((a, b) => Number(a.startNs - b.startNs));
    expect(attempts.map((a) => [a.attributes['http.response.status_code'], a.statusCode])).toEqual([
      [500, 2],
      [204, 0],
    ]);
    expect(hooks.map((h) => h.headers.traceparent)).toEqual(attempts.map((a) => `00-${traceId}-${a.spanId}-01`));
    for (const a of attempts) expect(ancestors(spans, a).at(-1)).toBe(root);
    // The retry's job is added by the first attempt's delivery: its producer span is under that
    // delivery's consumer span, and the second delivery runs that job.
    const deliveries = spans.filter((s) => s.name === 'deliver webhook').sort((a, b) => Number(a.startNs - b.startNs));
    expect([deliveries.map((d) => d.spanId), info]).toEqual([attempts.map((a) => a.parentSpanId), info]);
    const retryJob = spans.find((s) => s.name === 'send {webhooks}' && s.service === 'webhook-dispatcher');
    expect([retryJob?.parentSpanId, retryJob?.attributes['messaging.message.id'], info]).toEqual([deliveries[0]!.spanId, deliveries[1]!.attributes['messaging.message.id'], info]);
    // The model server's webhooks to the API are traced (POSTs); their URL's token never is.
    const modelHooks = collector.spans.filter((s) => String(s.attributes['url.path'] ?? '').startsWith('/internal/model-webhooks/'));
    expect(modelHooks.length).toBeGreaterThan(0);
    for (const s of modelHooks) expect(s.attributes['url.path']).toMatch(/^\/internal\/model-webhooks\/[^/]+\/\[token\]$/);
    // BullMQ makes no spans, in any trace: not for the jobs (added, run, completed, failed), nor for a
    // worker's own housekeeping (its lock renewals every 500 ms while the video ran, its stalled-job checks).
    const bullmqSpan = /^(add|addBulk|process|complete|fail|retry|delay|getNextJob|extendLocks|moveStalledJobsToWait|startStalledCheckTimer|close) /;
    expect(collector.spans.filter((s) => bullmqSpan.test(s.name)).map((s) => s.name)).toEqual([]);
    await second.stop();
  }, 90_000);

  it("a task that waited in line and a run handed back at shutdown: each job's producer span in its own task's trace", async () => {
    const videoWorker = () => worker({ WORKER_KINDS: 'video-generation', WORKER_CONCURRENCY: '1' });
    const first = await videoWorker();
    const a = await created('video-generation', { prompt: 'traced first', duration_seconds: 1 });
    await cog.waitForHeld(predictionId(a, 1));
    // The only slot is taken: B waits in its account's line, and a freed slot releases it later.
    const b = await created('video-generation', { prompt: 'traced in line', duration_seconds: 1 });
    const [traceA, traceB] = [(await accessLine(a)).trace_id as string, (await accessLine(b)).trace_id as string];
    // SIGTERM: A's run is handed back (its next job, release 2, keeps its place).
    await first.stop();
    const second = await videoWorker();
    await waitFor(() => cog.putRequests()[predictionId(a, 1)]! > 1, { what: "A's second run to re-attach" });
    cog.held.release(predictionId(a, 1));
    await cog.waitForHeld(predictionId(b, 1));
    cog.held.release(predictionId(b, 1));
    for (const id of [a, b]) expect((await waitForTask(system.api, key.plaintext, id)).status).toBe(20);

    const sends = (spans: ReceivedSpan[]) => spans.filter((s) => s.kind === KIND.producer).sort((x, y) => Number(x.startNs - y.startNs));
    const ofA = await collector.waitForTrace(traceA, (s) => sends(s).length === 2 && s.filter((x) => x.name === 'run video-generation').length === 2);
    const infoA = `\n${tree(ofA)}`;
    const rootA = ofA.find((s) => s.parentSpanId === '')!;
    const sent = (spans: ReceivedSpan[]) => sends(spans).map((s) => [s.service, s.resource['process.pid'], s.name, s.attributes['messaging.message.id'], s.parentSpanId]);
    // The creation sent A's first job; the stopping worker sent its second (the hand-back).
    expect([sent(ofA), infoA]).toEqual([
      [
        ['api', api.child.pid, 'send {tasks-video-generation}', a, rootA.spanId],
        ['worker', first.child.pid, 'send {tasks-video-generation}', `${a}-2`, rootA.spanId],
      ],
      infoA,
    ]);
    // B's producer span is its creation's, from the moment it joined the line: the worker whose
    // freed slot added its job later made none in any trace.
    const ofB = await collector.waitForTrace(traceB, (s) => s.some((x) => x.name === 'run video-generation') && sends(s).length > 0);
    const infoB = `\n${tree(ofB)}`;
    const rootB = ofB.find((s) => s.parentSpanId === '')!;
    expect([sent(ofB), infoB]).toEqual([[['api', api.child.pid, 'send {tasks-video-generation}', b, rootB.spanId]], infoB]);
    expect(collector.spans.filter((s) => s.kind === KIND.producer && s.attributes['messaging.message.id'] === b)).toHaveLength(1);
    await second.stop();
  }, 90_000);

  it('a malformed traceparent is ignored: 201, and a new trace', async () => {
    const res = await create('video-generation', { prompt: 'bad traceparent', duration_seconds: 1 }, { traceparent: '00-not-a-trace-01' });
    expect(res.status).toBe(201);
    const { public_id: publicId } = (await res.json()) as { public_id: string };
    const traceId = (await accessLine(publicId)).trace_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const [root] = await collector.waitForTrace(traceId, (s) => s.some((x) => x.kind === KIND.server));
    expect(collector.trace(traceId).find((s) => s.kind === KIND.server)).toMatchObject({ parentSpanId: '', name: 'POST /api/tasks/video-generation' });
    expect(root).toBeDefined();
    const cancelled = await fetch(`${apiUrl}/api/tasks/${publicId}/cancel`, { method: 'POST', headers: withKey(key) });
    expect(cancelled.status).toBe(200);
  });

  it('spans go as JSON by default, as protobuf with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf', async () => {
    const port = await freePort();
    const proto = await startChild(
      'api',
      { ...serviceEnv, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
      'api listening',
      'node',
    );
    children.push(proto);
    const serverSpansOf = (pid: number | undefined) => collector.spans.filter((s) => s.resource['process.pid'] === pid && s.kind === KIND.server);
    // A read is traced when its caller's traceparent is sampled.
    for (const base of [apiUrl, `http://127.0.0.1:${port}`]) {
      expect((await fetch(`${base}/api/tasks/task_doesnotexist`, { headers: { ...withKey(key), traceparent: callerTrace('01').header } })).status).toBe(404);
    }
    await waitFor(() => serverSpansOf(proto.child.pid).length > 0 && serverSpansOf(api.child.pid).length > 0, { what: 'a server span from each API' });
    expect(new Set(serverSpansOf(proto.child.pid).map((s) => s.encoding))).toEqual(new Set(['protobuf']));
    expect(new Set(serverSpansOf(api.child.pid).map((s) => s.encoding))).toEqual(new Set(['json']));
    await proto.stop();
  }, 60_000);

  it('an unreachable collector: requests are answered as usual, dropped spans are counted and logged once', async () => {
    const closedPort = await freePort();
    const port = await freePort();
    const lonely = await startChild(
      'api',
      { ...serviceEnv, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closedPort}` },
      'api listening',
      'node',
    );
    children.push(lonely);
    const base = `http://127.0.0.1:${port}`;
    const read = (i: number) => fetch(`${base}/api/tasks/task_doesnotexist${i}`, { headers: { ...withKey(key), traceparent: callerTrace('01').header } });
    for (let i = 0; i < 5; i++) expect((await read(i)).status).toBe(404);
    const dropped = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Number(/^taskapi_otel_spans_dropped_total\{service="api"\} (\d+)/m.exec(text)?.[1] ?? NaN);
    };
    await waitFor(async () => (await dropped()) >= 5, { timeoutMs: 30_000, intervalMs: 250, what: 'dropped spans to be counted' });
    for (let i = 0; i < 5; i++) expect((await read(i)).status).toBe(404);
    await waitFor(async () => (await dropped()) >= 10, { timeoutMs: 30_000, intervalMs: 250, what: 'more dropped spans' });
    expect(lonely.logs.filter((l) => l.message === 'trace spans dropped')).toEqual([expect.objectContaining({ service: 'api', level: 'warn' })]);
    await lonely.stop();
    expect(lonely.child.exitCode).toBe(0);
  }, 90_000);

  it('writes start a trace; reads, probes and /metrics only with a sampled traceparent, and their access lines name only recorded traces', async () => {
    const stamp = Date.now();
    const readPath = `/api/tasks/task_policy${stamp}`;
    const unsampled = callerTrace('00');
    const sampled = callerTrace('01');
    expect((await fetch(`${apiUrl}${readPath}`, { headers: withKey(key) })).status).toBe(404);
    expect((await fetch(`${apiUrl}${readPath}`, { headers: { ...withKey(key), traceparent: unsampled.header } })).status).toBe(404);
    expect((await fetch(`${apiUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${apiUrl}/metrics`)).status).toBe(200);
    expect((await fetch(`${apiUrl}${readPath}`, { headers: { ...withKey(key), traceparent: sampled.header } })).status).toBe(404);
    // A write, last: once its span is in, the spans of every request before it would be too
    // (spans go out in the order they end, from one queue).
    const cancelPath = `/api/tasks/task_policy${stamp}/cancel`;
    expect((await fetch(`${apiUrl}${cancelPath}`, { method: 'POST', headers: withKey(key) })).status).toBe(404);
    const fromApi = () => collector.spans.filter((s) => s.resource['process.pid'] === api.child.pid && s.kind === KIND.server);
    const cancel = await waitFor(() => fromApi().find((s) => s.attributes['url.path'] === cancelPath), { what: "the cancel's server span" });
    expect(cancel).toMatchObject({ parentSpanId: '', name: 'POST /api/tasks/{publicId}/cancel' });
    const reads = fromApi().filter((s) => s.attributes['url.path'] === readPath);
    expect(reads.map((s) => [s.traceId, s.parentSpanId])).toEqual([[sampled.traceId, sampled.parentId]]);
    expect(fromApi().filter((s) => s.attributes['url.path'] === '/healthz' || s.attributes['url.path'] === '/metrics')).toEqual([]);
    expect(collector.trace(unsampled.traceId)).toEqual([]);
    const lines = await waitFor(() => {
      const found = api.logs.filter((l) => l.path === readPath);
      return found.length === 3 ? found : undefined;
    }, { what: 'the three access lines' });
    expect(lines.map((l) => l.trace_id)).toEqual([undefined, undefined, sampled.traceId]);
    expect((await waitFor(() => api.logs.find((l) => l.path === cancelPath), { what: "the cancel's access line" })).trace_id).toBe(cancel.traceId);
  });

  it("a worker's probes and scrapes: a server span only with a sampled traceparent", async () => {
    const opsPort = await freePort();
    const running = await worker({ OPS_PORT: String(opsPort) });
    const sampled = callerTrace('01');
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${opsPort}/metrics`, { headers: { traceparent: callerTrace('00').header } })).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${opsPort}/metrics`, { headers: { traceparent: sampled.header } })).status).toBe(200);
    await running.stop();
    const fromWorker = collector.spans.filter((s) => s.resource['process.pid'] === running.child.pid && s.kind === KIND.server);
    expect(fromWorker.map((s) => [s.name, s.traceId, s.parentSpanId, s.attributes['url.path'], s.attributes['http.response.status_code']])).toEqual([
      ['GET', sampled.traceId, sampled.parentId, '/metrics', 200],
    ]);
  });

  it("a read token in the query string never reaches a span's attributes", async () => {
    const id = await created('image-generation', { prompt: 'a token in the query', width: 64, height: 64 });
    const minted = await fetch(`${apiUrl}/api/tasks/${id}/read-token`, { method: 'POST', headers: withKey(key) });
    const { token } = (await minted.json()) as { token: string };
    const sampled = callerTrace('01');
    expect((await fetch(`${apiUrl}/api/public/tasks/${id}?access_token=${token}&view=full`, { headers: { traceparent: sampled.header } })).status).toBe(200);
    const span = await waitFor(() => collector.trace(sampled.traceId).find((s) => s.kind === KIND.server), { what: "the read's server span" });
    expect(span.attributes['url.path']).toBe(`/api/public/tasks/${id}`);
    expect(span.attributes['url.query']).toBe('access_token=REDACTED&view=full');
    expect(JSON.stringify(collector.spans, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(token.slice(4, 40));
  });

  it('OTEL_NODE_ENABLED_INSTRUMENTATIONS=pg,ioredis adds PostgreSQL and Redis command spans to a creation', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const verbose = await startChild('api', { ...serviceEnv, PORT: String(port), PUBLIC_BASE_URL: base, OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg,ioredis' }, 'api listening', 'node');
    children.push(verbose);
    const res = await fetch(`${base}/api/tasks/video-generation`, {
      method: 'POST',
      headers: { ...withKey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'command spans', duration_seconds: 1 }),
    });
    expect(res.status).toBe(201);
    const { public_id: publicId } = (await res.json()) as { public_id: string };
    const line = await waitFor(() => verbose.logs.find((l) => l.method === 'POST' && l.public_id === publicId), { what: 'the access line' });
    const traceId = line.trace_id as string;
    const spans = await collector.waitForTrace(traceId, (x) => x.some((s) => dbSystem(s) === 'postgresql') && x.some((s) => dbSystem(s) === 'redis'), {
      what: 'pg and ioredis spans in the creation',
    });
    expect(spans.find((s) => s.parentSpanId === '')).toMatchObject({ service: 'api', name: 'POST /api/tasks/video-generation' });
    expect((await fetch(`${base}/api/tasks/${publicId}/cancel`, { method: 'POST', headers: withKey(key) })).status).toBe(200);

    // A worker's run: the statements and Redis calls that end it are under its run span.
    const running = await worker({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg,ioredis' });
    const image = await created('image-generation', { prompt: 'command spans in a run', width: 64, height: 64 });
    expect((await waitForTask(system.api, key.plaintext, image)).status).toBe(20);
    const imageTrace = (await accessLine(image)).trace_id as string;
    const inRun = (x: ReceivedSpan[]) => {
      const run = x.find((s) => s.name === 'run image-generation');
      return run ? x.filter((s) => s.service === 'worker' && dbSystem(s) !== undefined && ancestors(x, s).includes(run)) : [];
    };
    const runSpans = await collector.waitForTrace(imageTrace, (x) => inRun(x).some((s) => dbSystem(s) === 'postgresql') && inRun(x).some((s) => dbSystem(s) === 'redis'), {
      what: "pg and ioredis spans under the worker's run span",
    });
    expect(inRun(runSpans).length).toBeGreaterThan(1);
    await running.stop();
    await verbose.stop();
  }, 60_000);

  it('a task traced by hand (an API without an endpoint) is sampled: the worker and the dispatcher that export record it; a worker without an endpoint sends its traceparent to the Cog server', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const handApi = await startChild('api', { ...serviceEnv, PORT: String(port), PUBLIC_BASE_URL: base, OTEL_EXPORTER_OTLP_ENDPOINT: '' }, 'api listening', 'node');
    children.push(handApi);
    const createdBy = async (kind: string, body: Record<string, unknown>) => {
      const res = await fetch(`${base}/api/tasks/${kind}`, { method: 'POST', headers: { ...withKey(key), 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
      const { public_id: publicId } = (await res.json()) as { public_id: string };
      const line = await waitFor(() => handApi.logs.find((l) => l.method === 'POST' && l.public_id === publicId), { what: 'the access line' });
      return { publicId, traceId: line.trace_id as string };
    };

    // Recorded downstream: the run and the attempt, in the task's trace, sampled.
    const exporting = await worker();
    const image = await createdBy('image-generation', { prompt: 'traced by hand', width: 64, height: 64, callback_url: receiver.url('/by-hand') });
    expect(image.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect((await waitForTask(system.api, key.plaintext, image.publicId)).status).toBe(20);
    const [hook] = await receiver.waitForCount('/by-hand', 1);
    expect(hook!.headers.traceparent).toMatch(new RegExp(`^00-${image.traceId}-[0-9a-f]{16}-01$`));
    const spans = await collector.waitForTrace(image.traceId, (x) => x.some((s) => s.name === 'run image-generation') && x.some((s) => s.name === 'webhook attempt'));
    expect(spans.filter((s) => s.service === 'api')).toEqual([]);
    await exporting.stop();

    // No endpoint on the worker either: its Cog request still carries the task's trace.
    const byHand = await worker({ OTEL_EXPORTER_OTLP_ENDPOINT: '', COG_WEBHOOK_BASE_URL: base });
    const video = await createdBy('video-generation', { prompt: 'cog by hand', duration_seconds: 1 });
    const id = predictionId(video.publicId, 1);
    await cog.waitForHeld(id);
    expect(cog.predictions().find((p) => p.id === id)?.traceparent).toMatch(new RegExp(`^00-${video.traceId}-[0-9a-f]{16}-01$`));
    cog.held.release(id);
    expect((await waitForTask(system.api, key.plaintext, video.publicId)).status).toBe(20);
    await byHand.stop();
    await handApi.stop();
  }, 90_000);
});
