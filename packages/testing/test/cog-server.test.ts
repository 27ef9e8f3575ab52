import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PNG } from 'pngjs';
import { CogFile, createModel, isAlive, processName, request, spawnCogServer, startCogServer, waitFor, type CogModel, type CogServer, type CogServerOptions } from '../src';

const ROOT = path.resolve(__dirname, '../../..');
const MAIN = path.join(ROOT, 'packages/testing/src/cog-server/main.ts');
const ASTRONAUT = readFileSync(path.join(ROOT, 'test/fixtures/astronaut.png'));

const NOT_READY = 'Setup has not finished yet. Wait until it has finished, or GET /health-check for status.';
const AT_CAPACITY = { error: 'At capacity - all prediction slots busy', status: 'failed' };
const NO_STREAMING = { error: 'This model does not support streaming responses. Add @cog.streaming to predict() to enable SSE.' };
const TQDM = /^ *\d+%\|.{10}\| \d+\/\d+ \[\d\d:\d\d<(\d\d:\d\d|\?)\]$/;

const servers: CogServer[] = [];
const closers: Array<() => Promise<void>> = [];

async function cog(opts: CogServerOptions, ready = true): Promise<CogServer> {
  const server = await startCogServer(opts);
  servers.push(server);
  if (ready) await waitFor(async () => (await request(server.url, 'GET', '/health-check')).body.status === 'READY', { what: 'READY' });
  return server;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(closers.splice(0).map((close) => close()));
});

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  at: number;
}

type Reply = number | { status: number; headers?: Record<string, string>; body?: Buffer };

/** A real HTTP receiver (webhooks, files to fetch); `reply` answers each request. */
async function receiver(reply: (r: Received) => Reply = () => 204) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const entry: Received = { path: req.url ?? '/', headers: req.headers, body: raw ? JSON.parse(raw) : undefined, at: Date.now() };
      if (req.method === 'POST') received.push(entry);
      const answer = reply(entry);
      const r = typeof answer === 'number' ? { status: answer } : answer;
      res.writeHead(r.status, r.headers).end(r.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: (p = '/hook') => `http://127.0.0.1:${port}${p}`, received };
}

interface SseEvent {
  event: string;
  data: any;
}

/** Reads a server-sent event stream; `onEvent` sees each event as it arrives. Resolves with all once the server closes it. */
async function readSse(res: Response, onEvent: (e: SseEvent) => void = () => undefined): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return events;
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const name = block.find((l) => l.startsWith('event: '))?.slice(7);
      const data = block.find((l) => l.startsWith('data: '))?.slice(6);
      if (name === undefined || data === undefined) continue; // a keep-alive comment
      const event = { event: name, data: JSON.parse(data) };
      events.push(event);
      onEvent(event);
    }
  }
}

function openStream(url: string, method: 'POST' | 'PUT', body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body), signal });
}

function decodeDataUrl(url: string): { contentType: string; data: Buffer } {
  const match = /^data:([^;]+);base64,(.*)$/.exec(url);
  if (!match) throw new Error(`not a base64 data URL: ${url.slice(0, 40)}`);
  return { contentType: match[1] as string, data: Buffer.from(match[2] as string, 'base64') };
}

const record = (server: CogServer, id: string) => server.predictions().find((p) => p.id === id);

describe('Cog server: discovery and health', () => {
  it('serves the discovery document and READY with the setup it did', async () => {
    const server = await cog({ model: 'echo' });
    const root = await request(server.url, 'GET', '/');
    expect(root.status).toBe(200);
    expect(root.headers.get('content-type')).toBe('application/json');
    expect(root.body).toEqual({
      cog_version: '0.22.0',
      docs_url: '/docs',
      openapi_url: '/openapi.json',
      shutdown_url: '/shutdown',
      healthcheck_url: '/health-check',
      predictions_url: '/predictions',
      predictions_idempotent_url: '/predictions/{prediction_id}',
      predictions_cancel_url: '/predictions/{prediction_id}/cancel',
    });
    const health = await request(server.url, 'GET', '/health-check');
    expect(health.body).toEqual({
      status: 'READY',
      setup: { started_at: expect.stringMatching(/\+00:00$/), completed_at: expect.stringMatching(/\+00:00$/), status: 'succeeded', logs: expect.stringContaining('echo') },
      version: { coglet: '0.22.0' },
    });
    const openapi = await request(server.url, 'GET', '/openapi.json');
    expect(openapi.body.components.schemas.Input.properties.delay_ms).toMatchObject({ type: 'integer', default: 0 });
    expect(openapi.body.paths['/predictions'].post['x-cog-streaming']).toBe(false);
    expect((await request(server.url, 'GET', '/predictions/stream')).status).toBe(405);
    expect((await request(server.url, 'GET', '/nowhere')).status).toBe(404);
  });

  it("serves a test's own /openapi.json (any text), none (404), or the model's again", async () => {
    const server = await cog({ model: 'echo', openapi: 'not json {' });
    const raw = await fetch(`${server.url}/openapi.json`);
    expect([raw.status, await raw.text()]).toEqual([200, 'not json {']);
    server.setOpenApi(null);
    expect((await fetch(`${server.url}/openapi.json`)).status).toBe(404);
    server.setOpenApi(undefined);
    expect((await request(server.url, 'GET', '/openapi.json')).body.components.schemas.Input.properties.delay_ms).toMatchObject({ type: 'integer' });
  });

  it('reports STARTING during setup and answers 503 to predictions until READY', async () => {
    const server = await cog({ model: 'echo', setupMs: 1_500 }, false);
    const health = await request(server.url, 'GET', '/health-check');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('STARTING');
    expect(health.body.setup).toEqual({ started_at: expect.any(String), status: 'starting' });
    const early = await request(server.url, 'POST', '/predictions', { body: { input: { tag: 'early' } } });
    expect(early.status).toBe(503);
    expect(early.body).toEqual({ error: NOT_READY, status: 'failed' });
    // Validation comes first, as in coglet: bad input is 422 even while starting.
    expect((await request(server.url, 'POST', '/predictions', { body: { input: { delay_ms: 'soon' } } })).status).toBe(422);
    expect(server.predictions()).toEqual([]);

    await waitFor(async () => (await request(server.url, 'GET', '/health-check')).body.status === 'READY', { what: 'READY' });
    const later = await request(server.url, 'POST', '/predictions', { body: { input: { tag: 'later' } } });
    expect(later.status).toBe(200);
    expect(later.body.output).toEqual({ delay_ms: 0, tag: 'later' });
  });

  it('lets a test force SETUP_FAILED, DEFUNCT and UNHEALTHY, and go back to automatic', async () => {
    const server = await cog({ model: 'echo' });
    const force = (status: string | null) => request(server.url, 'POST', '/_test/health', { body: { status } });
    for (const status of ['SETUP_FAILED', 'DEFUNCT']) {
      expect((await force(status)).status).toBe(200);
      expect((await request(server.url, 'GET', '/health-check')).body.status).toBe(status);
      const refused = await request(server.url, 'POST', '/predictions', { body: { input: {} } });
      expect(refused.status).toBe(503);
    }
    await force('UNHEALTHY');
    const unhealthy = await request(server.url, 'GET', '/health-check');
    expect(unhealthy.body).toMatchObject({ status: 'UNHEALTHY', user_healthcheck_error: expect.any(String) });
    // A failing user healthcheck does not stop predictions in coglet.
    expect((await request(server.url, 'POST', '/predictions', { body: { input: {} } })).status).toBe(200);
    server.setHealth(null);
    expect((await request(server.url, 'GET', '/health-check')).body).not.toHaveProperty('user_healthcheck_error');
    expect((await request(server.url, 'GET', '/health-check')).body.status).toBe('READY');
    expect((await force('SIDEWAYS')).status).toBe(400);
  });
});

describe('Cog server: predictions', () => {
  it('runs the image model synchronously: 200 with a real PNG as a data URL, unknown inputs dropped', async () => {
    const server = await cog({ model: 'image' });
    const res = await request(server.url, 'POST', '/predictions', { body: { input: { prompt: 'a red fox in snow', width: 96, height: 64, seed: 7 } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.stringMatching(/^pred_[0-9a-f]+$/), status: 'succeeded', output: expect.any(String), logs: '', metrics: { predict_time: expect.any(Number) } });
    const { contentType, data } = decodeDataUrl(res.body.output);
    expect(contentType).toBe('image/png');
    const png = PNG.sync.read(data);
    expect([png.width, png.height]).toEqual([96, 64]);
    const [rec] = server.predictions();
    expect(rec).toMatchObject({ id: res.body.id, input: { prompt: 'a red fox in snow', width: 96, height: 64 }, status: 'succeeded', cancelRequested: false, puts: 0 });
    expect(rec?.input).not.toHaveProperty('seed');
    expect(rec!.startedAt! >= rec!.createdAt && rec!.completedAt! >= rec!.startedAt!).toBe(true);
  });

  it('answers 422 for bad input (coglet detail entries) and for a PUT whose body id differs from the URL', async () => {
    const server = await cog({ model: 'image' });
    const bad = await request(server.url, 'POST', '/predictions', { body: { input: { width: 2000, height: 'tall', color: 'red' } } });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [
        { loc: ['body', 'input', 'prompt'], msg: 'Field required', type: 'value_error.missing' },
        { loc: ['body', 'input', 'width'], msg: '2000 is greater than the maximum of 1024', type: 'value_error' },
        { loc: ['body', 'input', 'height'], msg: '"tall" is not of type "integer"', type: 'value_error' },
      ],
    });
    const mismatch = await request(server.url, 'PUT', '/predictions/url-id', { body: { id: 'body-id', input: { prompt: 'x' } } });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body).toEqual({ detail: [{ loc: ['body', 'id'], msg: 'prediction ID must match the ID supplied in the URL', type: 'value_error' }] });
    expect(server.predictions()).toEqual([]);
    expect(server.putRequests()).toEqual({ 'url-id': 1 });
  });

  it('fails with the model error as data: 200, status failed', async () => {
    const server = await cog({ model: 'fail' });
    const res = await request(server.url, 'POST', '/predictions', { body: { id: 'oom', input: {} } });
    expect(res.status).toBe(200);
    // coglet sends empty logs on a failed sync prediction, whatever the model printed.
    expect(res.body).toEqual({ id: 'oom', error: 'CUDA out of memory.', logs: '', status: 'failed', metrics: { predict_time: expect.any(Number) } });
    const custom = await cog({ model: 'fail', failMessage: 'NSFW content detected.' });
    expect((await request(custom.url, 'POST', '/predictions', { body: { input: {} } })).body.error).toBe('NSFW content detected.');
  });

  it('runs asynchronously with webhooks: start, throttled logs, output, then completed retried after two 503s', async () => {
    const server = await cog({ model: 'slow' });
    let terminal = 0;
    const hooks = await receiver((r) => (['succeeded', 'failed', 'canceled'].includes(r.body?.status) && ++terminal <= 2 ? 503 : 200));
    const id = 'async-webhooks';
    const created = await request(server.url, 'PUT', `/predictions/${id}`, {
      headers: { prefer: 'respond-async', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'cog=test' },
      body: { input: { steps: 12, step_ms: 100 }, webhook: hooks.url() },
    });
    expect(created.status).toBe(202);
    expect(created.body).toEqual({ id, status: 'starting' });

    await waitFor(() => terminal >= 3, { timeoutMs: 10_000, what: 'the completed webhook to be accepted' });
    const kinds = hooks.received.map(({ body }) => (body.status !== 'processing' ? 'completed' : 'output' in body ? 'output' : body.logs === '' ? 'start' : 'logs'));
    expect(kinds[0]).toBe('start');
    expect(kinds.slice(-4)).toEqual(['output', 'completed', 'completed', 'completed']);
    const logsHooks = hooks.received.filter((_, i) => kinds[i] === 'logs');
    // 12 lines in 1.2 s, at most one update per 500 ms: most are dropped, the next one carries them.
    expect(logsHooks.length).toBeGreaterThanOrEqual(1);
    expect(logsHooks.length).toBeLessThanOrEqual(3);
    // The throttle's own times: the sends go out one after another, so under load two can arrive
    // closer together than the throttle let them through.
    const accepted = server.predictions().find((p) => p.id === id)!.webhooks;
    const throttled = accepted.filter((w) => w.event === 'start' || w.event === 'logs');
    // Every update that arrived was let through (a send that failed would arrive as none).
    expect(throttled[0]?.event).toBe('start');
    expect(throttled.length).toBeGreaterThanOrEqual(kinds.filter((k) => k === 'start' || k === 'logs').length);
    for (let i = 1; i < throttled.length; i++) expect(throttled[i]!.at - throttled[i - 1]!.at).toBeGreaterThanOrEqual(490);
    expect(accepted.map((w) => w.event).slice(-2)).toEqual(['output', 'completed']);

    const completed = hooks.received.filter((_, i) => kinds[i] === 'completed');
    expect(completed[0]!.body).toEqual({ id, status: 'succeeded', logs: expect.any(String), output: { steps: 12 }, metrics: { predict_time: expect.any(Number) } });
    expect(completed[0]!.body.logs.trimEnd().split('\n')).toHaveLength(12);
    expect(completed[0]!.body.logs.trimEnd().split('\n').every((line: string) => TQDM.test(line))).toBe(true);
    expect(completed.map((c) => c.body)).toEqual([completed[0]!.body, completed[0]!.body, completed[0]!.body]);
    // Backoff from 100 ms, doubled per retry: the first retry after 200 ms, the second after 400 ms.
    expect(completed[1]!.at - completed[0]!.at).toBeGreaterThanOrEqual(150);
    expect(completed[2]!.at - completed[1]!.at).toBeGreaterThanOrEqual(350);
    for (const hook of hooks.received) {
      expect(hook.headers['user-agent']).toBe('coglet/0.22.0');
      expect(hook.headers['content-type']).toBe('application/json');
      expect(hook.headers.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
      expect(hook.headers.tracestate).toBe('cog=test');
    }
    expect(record(server, id)).toMatchObject({ status: 'succeeded', puts: 1 });
  });

  it('sends only the webhook events the filter names', async () => {
    const server = await cog({ model: 'slow' });
    const hooks = await receiver();
    const created = await request(server.url, 'POST', '/predictions', {
      headers: { prefer: 'respond-async' },
      body: { input: { steps: 6, step_ms: 150 }, webhook: hooks.url('/filtered'), webhook_events_filter: ['start', 'completed'] },
    });
    expect(created.status).toBe(202);
    await waitFor(() => hooks.received.some((r) => r.body.status === 'succeeded'), { what: 'the completed webhook' });
    // Webhooks go out in order, so nothing else can still be on its way.
    expect(hooks.received.map((r) => [r.path, r.body.status, r.body.logs === ''])).toEqual([
      ['/filtered', 'processing', true],
      ['/filtered', 'succeeded', false],
    ]);
    const bad = await request(server.url, 'POST', '/predictions', { body: { input: {}, webhook_events_filter: ['done'] } });
    expect(bad.status).toBe(422);
    expect(bad.text).toMatch(/unknown variant `done`/);
  });

  it('streams a streaming model as server-sent events, and answers 406 for one that is not', async () => {
    const server = await cog({ model: 'slow' });
    const res = await openStream(`${server.url}/predictions`, 'POST', { id: 'sse-1', input: { steps: 3, step_ms: 30 } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = await readSse(res);
    expect(events.map((e) => e.event)).toEqual(['start', 'log', 'log', 'log', 'output', 'completed']);
    expect(events[0]!.data).toEqual({ id: 'sse-1', status: 'processing' });
    expect(events[1]!.data).toEqual({ source: 'stdout', data: expect.stringMatching(/^ 33%\|███▎ {6}\| 1\/3 \[.*\]\n$/) });
    expect(events[4]!.data).toEqual({ chunk: { steps: 3 }, index: 0 });
    expect(events[5]!.data).toEqual({ id: 'sse-1', status: 'succeeded', logs: expect.stringMatching(/3\/3/), output: { steps: 3 }, metrics: { predict_time: expect.any(Number) } });

    const image = await cog({ model: 'image' });
    const refused = await openStream(`${image.url}/predictions`, 'POST', { input: { prompt: 'x' } });
    expect(refused.status).toBe(406);
    expect(await refused.json()).toEqual(NO_STREAMING);
    expect(image.predictions()).toEqual([]);
  });

  it('makes PUT idempotent: a second PUT of an in-flight id gets its state (202), no second run; a finished id starts anew', async () => {
    const server = await cog({ model: 'slow' });
    const id = 'wjx3whax6rf4vphkegkhcvpv6a';
    const first = await request(server.url, 'PUT', `/predictions/${id}`, { headers: { prefer: 'respond-async' }, body: { input: { steps: 20, step_ms: 50 } } });
    expect(first.status).toBe(202);
    await waitFor(() => record(server, id)?.status === 'processing', { what: 'the prediction to start' });
    // A retry, even synchronous and with other input, reaches the same prediction.
    const retry = await request(server.url, 'PUT', `/predictions/${id}`, { body: { input: { steps: 1 } } });
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual({ id, status: 'processing', logs: expect.any(String), metrics: {}, input: { steps: 20, step_ms: 50 } });
    expect(server.predictions()).toHaveLength(1);
    expect(server.predictions()[0]).toMatchObject({ id, puts: 2 });
    const controls = await request(server.url, 'GET', '/_test/predictions');
    expect(controls.body).toEqual({ predictions: [expect.objectContaining({ id, status: 'processing', puts: 2, cancelRequested: false })], putRequests: { [id]: 2 } });

    await waitFor(() => record(server, id)?.status === 'succeeded', { timeoutMs: 10_000, what: 'the prediction to finish' });
    const again = await request(server.url, 'PUT', `/predictions/${id}`, { body: { input: { steps: 1, step_ms: 0 } } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id, status: 'succeeded', output: { steps: 1 } });
    expect(server.predictions().map((p) => p.id)).toEqual([id, id]);
    expect(server.putRequests()).toEqual({ [id]: 3 });
  });

  it('re-attaches a stream to an in-flight prediction by PUT, replaying it from the start', async () => {
    const server = await cog({ model: 'slow' });
    const url = `${server.url}/predictions/reattach`;
    let logs = 0;
    const first = readSse(await openStream(url, 'PUT', { input: { steps: 6, step_ms: 80 } }), (e) => (logs += e.event === 'log' ? 1 : 0));
    await waitFor(() => logs >= 2, { what: 'two log events' });
    const second = await readSse(await openStream(url, 'PUT', {}));
    const all = await first;
    expect(all.map((e) => e.event)).toEqual(['start', 'log', 'log', 'log', 'log', 'log', 'log', 'output', 'completed']);
    expect(second).toEqual(all);
    expect(server.predictions()).toHaveLength(1);
    expect(server.predictions()[0]).toMatchObject({ puts: 2, status: 'succeeded' });
  });

  it('ends a re-attached stream with an error event when its events fell out of the replay buffer', async () => {
    const server = await cog({ model: 'slow', historyCapacity: 2 });
    const id = 'truncated';
    await request(server.url, 'PUT', `/predictions/${id}`, { headers: { prefer: 'respond-async' }, body: { input: { steps: 200, step_ms: 20 } } });
    await waitFor(async () => (await request(server.url, 'PUT', `/predictions/${id}`, {})).body.logs.split('\n').length > 3, { what: 'three log lines' });
    const events = await readSse(await openStream(`${server.url}/predictions/${id}`, 'PUT', {}));
    expect(events).toEqual([{ event: 'error', data: { error: 'SSE stream replay truncated; events were dropped', skipped: expect.any(Number) } }]);
    expect(events[0]!.data.skipped).toBeGreaterThanOrEqual(2);
    expect((await request(server.url, 'POST', `/predictions/${id}/cancel`)).status).toBe(200);
  });

  it('cancels: 200 {} and the run sees its signal abort, the prediction ends canceled; 404 {} for an unknown id', async () => {
    let signal: AbortSignal | undefined;
    const hang = createModel('hang');
    const model: CogModel = {
      ...hang,
      run: (input, ctx) => {
        signal = ctx.signal;
        return hang.run(input, ctx);
      },
    };
    const server = await cog({ model });
    const hooks = await receiver();
    const created = await request(server.url, 'POST', '/predictions', { headers: { prefer: 'respond-async' }, body: { id: 'c1', input: {}, webhook: hooks.url() } });
    expect(created.status).toBe(202);
    await waitFor(() => record(server, 'c1')?.status === 'processing', { what: 'the run to start' });
    expect(signal?.aborted).toBe(false);

    const cancel = await request(server.url, 'POST', '/predictions/c1/cancel');
    expect(cancel.status).toBe(200);
    expect(cancel.body).toEqual({});
    await waitFor(() => record(server, 'c1')?.status === 'canceled', { what: 'canceled' });
    expect(signal?.aborted).toBe(true);
    expect(record(server, 'c1')?.cancelRequested).toBe(true);
    await waitFor(() => hooks.received.find((r) => r.body.status === 'canceled'), { what: 'the canceled webhook' });
    expect(hooks.received.at(-1)!.body).toEqual({ id: 'c1', status: 'canceled', logs: '', metrics: { predict_time: expect.any(Number) } });

    for (const id of ['c1', 'never-was']) {
      const missing = await request(server.url, 'POST', `/predictions/${id}/cancel`);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({});
    }
  });

  it('cancels a sync prediction when its client disconnects, and a stream-created one when its last stream does', async () => {
    const server = await cog({ model: 'hang' });
    const client = new AbortController();
    const sync = fetch(`${server.url}/predictions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'gone', input: {} }), signal: client.signal });
    await waitFor(() => record(server, 'gone')?.status === 'processing', { what: 'the sync run to start' });
    client.abort();
    await expect(sync).rejects.toThrow();
    await waitFor(() => record(server, 'gone')?.status === 'canceled', { what: 'the sync prediction to be canceled' });

    const viewer = new AbortController();
    expect((await openStream(`${server.url}/predictions/watched`, 'PUT', { input: {} }, viewer.signal)).status).toBe(200);
    await waitFor(() => record(server, 'watched')?.status === 'processing', { what: 'the streamed run to start' });
    viewer.abort();
    await waitFor(() => record(server, 'watched')?.status === 'canceled', { what: 'the streamed prediction to be canceled' });
    expect(record(server, 'watched')?.cancelRequested).toBe(true);
  });

  it('answers a sync prediction cancelled by id with 200 status canceled', async () => {
    const server = await cog({ model: 'hang' });
    const sync = request(server.url, 'POST', '/predictions', { body: { id: 'stop-me', input: {} } });
    await waitFor(() => record(server, 'stop-me')?.status === 'processing', { what: 'the run to start' });
    await request(server.url, 'POST', '/predictions/stop-me/cancel');
    const res = await sync;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'stop-me', logs: '', status: 'canceled', metrics: { predict_time: expect.any(Number) } });
  });

  it('answers 409 when every slot is busy, and reports BUSY until one frees', async () => {
    const server = await cog({ model: 'hang', concurrency: 2 });
    for (const id of ['a', 'b']) {
      expect((await request(server.url, 'PUT', `/predictions/${id}`, { headers: { prefer: 'respond-async' }, body: { input: {} } })).status).toBe(202);
    }
    expect((await request(server.url, 'GET', '/health-check')).body.status).toBe('BUSY');
    const post = await request(server.url, 'POST', '/predictions', { headers: { prefer: 'respond-async' }, body: { input: {} } });
    expect(post.status).toBe(409);
    expect(post.body).toEqual(AT_CAPACITY);
    const put = await request(server.url, 'PUT', '/predictions/c', { body: { input: {} } });
    expect(put.status).toBe(409);
    expect(put.body).toEqual(AT_CAPACITY);
    // The in-flight ones are still reachable by PUT: their state, not a 409.
    expect((await request(server.url, 'PUT', '/predictions/a', { body: { input: {} } })).status).toBe(202);

    await request(server.url, 'POST', '/predictions/a/cancel');
    await waitFor(async () => (await request(server.url, 'GET', '/health-check')).body.status === 'READY', { what: 'READY again' });
    expect(server.predictions().map((p) => [p.id, p.status])).toEqual([
      ['a', 'canceled'],
      ['b', 'processing'],
    ]);
  });

  it('serves file outputs from its own /_files with outputAs url, lists included', async () => {
    const server = await cog({ model: 'image', outputAs: 'url' });
    const res = await request(server.url, 'POST', '/predictions', { body: { id: 'png-url', input: { prompt: 'a lighthouse', width: 64, height: 80 } } });
    expect(res.body.output).toBe(`${server.url}/_files/png-url/image.png`);
    const file = await fetch(res.body.output as string);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    const png = PNG.sync.read(Buffer.from(await file.arrayBuffer()));
    expect([png.width, png.height]).toEqual([64, 80]);
    expect((await fetch(`${server.url}/_files/png-url/other.png`)).status).toBe(404);

    const pair: CogModel = { ...createModel('echo'), run: async () => [new CogFile('frame.gif', 'image/gif', Buffer.from('GIF89a-1')), new CogFile('frame.gif', 'image/gif', Buffer.from('GIF89a-2'))] };
    const lists = await cog({ model: pair, outputAs: 'url' });
    const listed = await request(lists.url, 'POST', '/predictions', { body: { id: 'two', input: {} } });
    expect(listed.body.output).toEqual([`${lists.url}/_files/two/frame.gif`, `${lists.url}/_files/two/frame-1.gif`]);
    const bodies = await Promise.all((listed.body.output as string[]).map(async (u) => Buffer.from(await (await fetch(u)).arrayBuffer()).toString()));
    expect(bodies).toEqual(['GIF89a-1', 'GIF89a-2']);

    const inline = await cog({ model: pair });
    const dataUrls = (await request(inline.url, 'POST', '/predictions', { body: { input: {} } })).body.output as string[];
    expect(dataUrls.map((u) => decodeDataUrl(u).data.toString())).toEqual(['GIF89a-1', 'GIF89a-2']);
  });

  it('runs the video model with tqdm progress lines and a progress metric', async () => {
    const server = await cog({ model: 'video' });
    const events = await readSse(await openStream(`${server.url}/predictions`, 'POST', { input: { prompt: 'waves at dusk', duration_seconds: 1 } }));
    const completed = events.at(-1)!;
    expect(completed.event).toBe('completed');
    expect(completed.data.status).toBe('succeeded');
    const { contentType, data } = decodeDataUrl(completed.data.output);
    expect(['video/mp4', 'image/gif']).toContain(contentType);
    expect(data.length).toBeGreaterThan(1_000);
    const lines = (completed.data.logs as string).trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(10); // a line per frame: 10 (gif) or 24 (mp4) in a second
    for (const line of lines) expect(line).toMatch(TQDM);
    const total = contentType === 'video/mp4' ? 24 : 10;
    expect(lines.at(-1)).toMatch(new RegExp(`^100%\\|██████████\\| ${total}/${total} \\[`));
    const progress = events.filter((e) => e.event === 'metric').map((e) => e.data);
    expect(progress.length).toBeGreaterThanOrEqual(10);
    for (const m of progress) expect(m).toMatchObject({ name: 'progress', mode: 'replace' });
    const values = progress.map((m) => m.value as number);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(values.at(-1)).toBe(1);
    expect(completed.data.metrics).toEqual({ progress: 1, predict_time: expect.any(Number) });
    expect(events.filter((e) => e.event === 'log').every((e) => e.data.source === 'stdout')).toBe(true);
  }, 60_000);

  it('runs the face model on the astronaut photo: a bare list of boxes, or face_coordinates from an http URL', async () => {
    const server = await cog({ model: 'face' });
    const res = await request(server.url, 'POST', '/predictions', { body: { input: { image: `data:image/png;base64,${ASTRONAUT.toString('base64')}` } } });
    expect(res.body.status).toBe('succeeded');
    expect(res.body.output).toEqual([{ x: expect.any(Number), y: expect.any(Number), width: expect.any(Number), height: expect.any(Number), score: expect.any(Number) }]);
    const [face] = res.body.output;
    expect(face.score).toBeGreaterThan(0.8);
    expect(face.x).toBeGreaterThanOrEqual(100);
    expect(face.x + face.width).toBeLessThanOrEqual(350);

    const photos = await receiver(() => ({ status: 200, headers: { 'content-type': 'image/png' }, body: ASTRONAUT }));
    const wrapped = await cog({ model: 'face', faceOutput: 'face_coordinates' });
    const fetched = await request(wrapped.url, 'POST', '/predictions', { body: { input: { image: photos.url('/astronaut.png') } } });
    expect(fetched.body).toMatchObject({ status: 'succeeded', output: { face_coordinates: [face] } });
  }, 60_000);

  it('records every prediction of the echo model with its times, and forgets them on reset', async () => {
    const server = await cog({ model: 'echo', concurrency: 2 });
    const [one, two] = await Promise.all(['one', 'two'].map((tag) => request(server.url, 'POST', '/predictions', { body: { input: { delay_ms: 200, tag } } })));
    expect([one!.body.output, two!.body.output]).toEqual([
      { delay_ms: 200, tag: 'one' },
      { delay_ms: 200, tag: 'two' },
    ]);
    const records = server.predictions();
    expect(records).toHaveLength(2);
    for (const r of records) expect(r.completedAt! - r.startedAt!).toBeGreaterThanOrEqual(190);
    // Two slots: both ran at once.
    expect(Math.max(...records.map((r) => r.startedAt!))).toBeLessThan(Math.min(...records.map((r) => r.completedAt!)));
    expect((await request(server.url, 'POST', '/_test/reset')).status).toBe(200);
    expect((await request(server.url, 'GET', '/_test/predictions')).body).toEqual({ predictions: [], putRequests: {} });
  });
});

describe('Cog server as a process', () => {
  it('main.ts prints exactly one line, serves, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--model', 'echo', '--port', '0', '--host', '127.0.0.1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    closers.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const url = await waitFor(() => /listening on (\S+)\n/.exec(stdout)?.[1], { timeoutMs: 20_000, what: 'the listening line' });
    expect(stdout).toMatch(/^cog server listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    const res = await request(url, 'POST', '/predictions', { body: { input: { tag: 'cli' } } });
    expect(res.body).toMatchObject({ status: 'succeeded', output: { delay_ms: 0, tag: 'cli' } });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout.split('\n')).toEqual([expect.stringMatching(/^cog server listening on /), '']);
  });

  it('spawnCogServer runs it as a recorded child process; stop() ends it with predictions in flight', async () => {
    const cli = await spawnCogServer({ model: 'slow', concurrency: 2 });
    closers.push(() => cli.stop());
    expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(processName(cli.pid)).toBe('cog-server');
    const health = await waitFor(async () => (await request(cli.url, 'GET', '/health-check')).body, { what: 'health' });
    expect(['STARTING', 'READY']).toContain(health.status);
    const started = await request(cli.url, 'PUT', '/predictions/long', { headers: { prefer: 'respond-async' }, body: { input: { steps: 100, step_ms: 100 } } });
    expect(started.status).toBe(202);
    await cli.stop();
    expect(isAlive(cli.pid)).toBe(false);
    await expect(fetch(`${cli.url}/health-check`)).rejects.toThrow();
  });
});
