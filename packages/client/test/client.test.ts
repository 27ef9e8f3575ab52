// The client's HTTP behaviour against a local server that misbehaves on purpose: rate limits with
// Retry-After, 503s, reset connections, hanging answers, non-JSON gateway pages, and the exact
// error it throws when retries are used up.
import { waitFor } from '@taskapi/testing';
import { API_VERSION, TaskApi, TaskApiConnectionError, TaskApiError, TaskApiTimeoutError, TaskWaitTimeoutError } from '../src';
import { fakeTask, startScriptedServer, type ScriptedServer } from './support/scripted-server';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UNAVAILABLE = { status: 503, json: { message: 'Service temporarily unavailable.' } };

describe('TaskApi over HTTP', () => {
  let server: ScriptedServer;
  const client = (opts: { maxRetries?: number; timeoutMs?: number; longPollSeconds?: number } = {}) => new TaskApi({ apiKey: 'sk-test-abc', baseUrl: `${server.url}/`, ...opts });

  beforeEach(async () => {
    server = await startScriptedServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('creates a task: body, API key, API version, User-Agent and a generated Idempotency-Key', async () => {
    server.script({ status: 201, json: fakeTask() });
    const task = await client().tasks.create('image-generation', { prompt: 'a cat', width: 64, payload: { order: 1 } });
    expect(task.public_id).toBe('task_3kT9xQ2mLp7Vn4Rb8Yc1Zd');
    const [req] = server.seen;
    expect(req).toMatchObject({ method: 'POST', url: '/api/tasks/image-generation' });
    expect(JSON.parse(req!.body)).toEqual({ prompt: 'a cat', width: 64, payload: { order: 1 } });
    expect(req!.headers['x-api-key']).toBe('sk-test-abc');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['idempotency-key']).toMatch(UUID);
    // The version the SDK's types were generated for (packages/client/src/generated.ts).
    expect(req!.headers['taskapi-version']).toBe(API_VERSION);
    expect(API_VERSION).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(req!.headers['user-agent']).toBe(`taskapi-client-js/0.0.0-dev (node ${process.versions.node})`);
  });

  it('createBatch: one request with {"tasks":[…]} and a generated Idempotency-Key, kept by its retries; the tasks in order', async () => {
    server.script(UNAVAILABLE, { status: 201, json: { data: [fakeTask(), { ...fakeTask(), public_id: 'task_second' }] } });
    const tasks = await client().tasks.createBatch('image-generation', [{ prompt: 'a' }, { prompt: 'b', width: 64 }]);
    expect(tasks.map((t) => t.public_id)).toEqual(['task_3kT9xQ2mLp7Vn4Rb8Yc1Zd', 'task_second']);
    expect(server.seen.map((r) => r.url)).toEqual(['/api/tasks/image-generation/batch', '/api/tasks/image-generation/batch']);
    expect(JSON.parse(server.seen[0]!.body)).toEqual({ tasks: [{ prompt: 'a' }, { prompt: 'b', width: 64 }] });
    expect(server.seen[0]!.headers['idempotency-key']).toMatch(UUID);
    expect(server.seen[1]!.headers['idempotency-key']).toBe(server.seen[0]!.headers['idempotency-key']);
  });

  it('createBatch: a batch larger than the rate limit can hold (429 without Retry-After) is thrown at once', async () => {
    const body = { message: "This batch of 21 tasks is larger than this key's rate limit of 20 requests per minute can ever hold; send at most 20 tasks per batch.", limit: 20, window: 'minute' };
    server.script({ status: 429, json: body });
    const err = await client().tasks.createBatch('face-detection', Array.from({ length: 21 }, () => ({ image_url: 'https://img.example/a.jpg' }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err).toMatchObject({ status: 429, message: body.message, body });
    expect(server.seen).toHaveLength(1);
  });

  it('429 with Retry-After: waits that long, then retries with the same Idempotency-Key', async () => {
    server.script({ status: 429, headers: { 'retry-after': '1' }, json: { message: 'Rate limit exceeded.', limit: 20, window: 'minute', retry_after: 1 } }, { status: 201, json: fakeTask() });
    await client().tasks.create('image-generation', { prompt: 'x' });
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(server.seen[1]!.headers['idempotency-key']).toBe(server.seen[0]!.headers['idempotency-key']);
  });

  it('a 429 whose Retry-After is beyond a minute (the daily limit) is thrown at once', async () => {
    server.script({ status: 429, headers: { 'retry-after': '3600' }, json: { message: 'Rate limit exceeded.', limit: 1000, window: 'day', retry_after: 3600 } });
    const err = await client().tasks.get('task_x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err).toMatchObject({ status: 429, message: 'Rate limit exceeded.', body: { window: 'day', retry_after: 3600 } });
    expect(server.seen).toHaveLength(1);
  });

  it('503 with Retry-After: waited out up to a minute (with a floor for 0), thrown at once beyond', async () => {
    server.script({ status: 503, headers: { 'retry-after': '0' }, json: { message: 'Service temporarily unavailable.' } }, { status: 200, json: fakeTask() });
    await client().tasks.get('task_x');
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(450);
    server.script({ status: 503, headers: { 'retry-after': '3600' }, json: { message: 'Service temporarily unavailable.' } });
    await expect(client().tasks.get('task_x')).rejects.toMatchObject({ status: 503, message: 'Service temporarily unavailable.' });
    expect(server.seen).toHaveLength(3);
  });

  it('503, 503, then 200: retried with backoff', async () => {
    server.script(UNAVAILABLE, UNAVAILABLE, { status: 200, json: fakeTask({ status: 10 }) });
    expect((await client().tasks.get('task_3kT9xQ2mLp7Vn4Rb8Yc1Zd')).status).toBe(10);
    expect(server.seen.map((r) => r.url)).toEqual(Array(3).fill('/api/tasks/task_3kT9xQ2mLp7Vn4Rb8Yc1Zd'));
  });

  it('maxRetries used up: TaskApiError with the status, the API message verbatim, the body and the request id', async () => {
    server.script(UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    const err = (await client({ maxRetries: 2 }).tasks.get('task_x').catch((e: unknown) => e)) as TaskApiError;
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err.name).toBe('TaskApiError');
    expect(err).toMatchObject({ status: 503, message: 'Service temporarily unavailable.', body: { message: 'Service temporarily unavailable.' }, requestId: 'req_test3' });
    expect(server.seen).toHaveLength(3);
  });

  it('a reset connection is retried; every create attempt carries the same Idempotency-Key', async () => {
    server.script('reset', UNAVAILABLE, { status: 201, json: fakeTask() });
    await client().tasks.create('video-generation', { prompt: 'waves' });
    expect(server.seen).toHaveLength(3);
    const keys = new Set(server.seen.map((r) => r.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(UUID);
  });

  it("the caller's Idempotency-Key is sent as given", async () => {
    server.script('reset', { status: 201, json: fakeTask() });
    await client().tasks.create('video-generation', { prompt: 'waves' }, { idempotencyKey: 'order-42' });
    expect(server.seen.map((r) => r.headers['idempotency-key'])).toEqual(['order-42', 'order-42']);
  });

  it('connection failures after the last retry: TaskApiConnectionError (status 0)', async () => {
    server.script('reset', 'reset');
    const err = await client({ maxRetries: 1 }).tasks.get('task_x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiConnectionError);
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err).toMatchObject({ status: 0, body: null, requestId: null });
    expect((err as Error).message).toMatch(/^Could not reach http:\/\/127\.0\.0\.1:\d+: /);
    expect(server.seen).toHaveLength(2);
  });

  it('a hanging answer hits timeoutMs; the retry gets through', async () => {
    server.script('hang', { status: 200, json: fakeTask() });
    await client({ timeoutMs: 300, maxRetries: 1 }).tasks.get('task_x');
    expect(server.seen).toHaveLength(2);
  });

  it('a hanging answer with no retries left: TaskApiTimeoutError', async () => {
    server.script('hang');
    const err = await client({ timeoutMs: 200, maxRetries: 0 }).tasks.get('task_x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiTimeoutError);
    expect((err as Error).message).toMatch(/within 200 ms/);
  });

  it('a non-JSON 502 from a proxy: retried, then TaskApiError with the text as body', async () => {
    const page = { status: 502, text: '<html><body>Bad Gateway</body></html>', headers: { 'content-type': 'text/html' } };
    server.script(page, page);
    const err = await client({ maxRetries: 1 }).tasks.get('task_x').catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, message: 'HTTP 502 Bad Gateway', body: '<html><body>Bad Gateway</body></html>', requestId: 'req_test2' });
    expect(server.seen).toHaveLength(2);
  });

  it('other errors are not retried and keep every field of the body', async () => {
    server.script({ status: 402, json: { message: 'Insufficient credits.', required: 10, available: 3 } });
    const err = await client().tasks.create('video-generation', { prompt: 'x' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 402, message: 'Insufficient credits.', body: { required: 10, available: 3 } });
    server.script({ status: 500, json: { message: 'Internal server error.' } });
    await expect(client().tasks.get('task_x')).rejects.toMatchObject({ status: 500 });
    expect(server.seen).toHaveLength(2);
  });

  it('list() follows next_cursor until null, passing the filters on every page', async () => {
    server.script(
      { status: 200, json: { data: [fakeTask({ public_id: 'task_a' }), fakeTask({ public_id: 'task_b' })], next_cursor: 'task_b' } },
      { status: 200, json: { data: [fakeTask({ public_id: 'task_c' })], next_cursor: 'task_c' } },
      { status: 200, json: { data: [], next_cursor: null } },
    );
    const ids: string[] = [];
    for await (const task of client().tasks.list({ kind: 'image-generation', status: [20, 30], limit: 2 })) ids.push(task.public_id);
    expect(ids).toEqual(['task_a', 'task_b', 'task_c']);
    const queries = server.seen.map((r) => Object.fromEntries(new URL(r.url, server.url).searchParams));
    expect(queries).toEqual([
      { kind: 'image-generation', status: '20,30', limit: '2' },
      { kind: 'image-generation', status: '20,30', limit: '2', cursor: 'task_b' },
      { kind: 'image-generation', status: '20,30', limit: '2', cursor: 'task_c' },
    ]);
  });

  it('wait() long-polls with Prefer: wait until the task is terminal', async () => {
    server.script(
      { status: 200, headers: { 'preference-applied': 'wait=60' }, json: fakeTask({ status: 10 }) },
      { status: 200, headers: { 'preference-applied': 'wait=60' }, json: fakeTask({ status: 20 }) },
    );
    expect((await client().tasks.wait('task_3kT9xQ2mLp7Vn4Rb8Yc1Zd')).status).toBe(20);
    // 50 s by default: under the 60 s idle timeout of common proxies.
    expect(server.seen.map((r) => r.headers.prefer)).toEqual(['wait=50', 'wait=50']);
  });

  it('wait(): longPollSeconds is an option of the client and of the call, checked', async () => {
    server.script({ status: 200, headers: { 'preference-applied': 'wait=30' }, json: fakeTask({ status: 20 }) }, { status: 200, headers: { 'preference-applied': 'wait=5' }, json: fakeTask({ status: 20 }) });
    await client({ longPollSeconds: 30 }).tasks.wait('task_x');
    await client({ longPollSeconds: 30 }).tasks.wait('task_x', { longPollSeconds: 5 });
    expect(server.seen.map((r) => r.headers.prefer)).toEqual(['wait=30', 'wait=5']);
    expect(() => client({ longPollSeconds: 61 })).toThrow('longPollSeconds must be a whole number of seconds from 1 to 60.');
    await expect(client().tasks.wait('task_x', { longPollSeconds: 0 })).rejects.toThrow(TypeError);
  });

  it('wait(): a long poll cut by a proxy (504) or unanswered is polled again without using up maxRetries', async () => {
    const gateway = { status: 504, text: '<html>504 Gateway Time-out</html>', headers: { 'content-type': 'text/html' } };
    server.script(gateway, gateway, gateway, { status: 200, headers: { 'preference-applied': 'wait=1' }, json: fakeTask({ status: 20 }) });
    expect((await client({ maxRetries: 0, longPollSeconds: 1 }).tasks.wait('task_x')).status).toBe(20);
    expect(server.seen).toHaveLength(4);
    // A hanging poll (its own timeout is the wait plus a grace, at least the client's timeoutMs).
    server.script('hang', { status: 200, headers: { 'preference-applied': 'wait=1' }, json: fakeTask({ status: 30 }) });
    const started = server.seen.length;
    expect((await client({ maxRetries: 0, timeoutMs: 200, longPollSeconds: 1 }).tasks.wait('task_x')).status).toBe(30);
    expect(server.seen.length - started).toBe(2);
  }, 30_000);

  it('wait(): repeated 504s stop at timeoutMs with TaskWaitTimeoutError', async () => {
    server.fallback = () => ({ status: 504, text: 'Gateway Time-out' });
    const err = await client({ maxRetries: 0 }).tasks.wait('task_x', { timeoutMs: 1500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskWaitTimeoutError);
  });

  it('wait(): timeoutMs must be positive and finite; a huge one does not fire at once', async () => {
    for (const timeoutMs of [0, -1, NaN, Infinity]) await expect(client().tasks.wait('task_x', { timeoutMs })).rejects.toThrow('wait() timeoutMs must be a positive, finite number of milliseconds.');
    server.script({ status: 200, headers: { 'preference-applied': 'wait=50' }, json: fakeTask({ status: 10 }) }, { status: 200, json: fakeTask({ status: 20 }) });
    // Above 2³¹−1 ms a timer would overflow and expire immediately.
    expect((await client().tasks.wait('task_x', { timeoutMs: 2 ** 40 })).status).toBe(20);
  });

  it('wait() against a server that did not wait (no Preference-Applied): pauses before asking again', async () => {
    server.script({ status: 200, json: fakeTask({ status: 10 }) }, { status: 200, json: fakeTask({ status: 30, error_code: 'engine_error' }) });
    expect(await client().tasks.wait('task_x')).toMatchObject({ status: 30, error_code: 'engine_error' });
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('wait() with timeoutMs: asks for no longer a wait, then TaskWaitTimeoutError with the last state', async () => {
    server.script({ status: 200, headers: { 'preference-applied': 'wait=2' }, json: fakeTask({ status: 10 }) }, 'hang');
    const err = (await client().tasks.wait('task_x', { timeoutMs: 1500 }).catch((e: unknown) => e)) as TaskWaitTimeoutError;
    expect(err).toBeInstanceOf(TaskWaitTimeoutError);
    expect(err.task).toMatchObject({ status: 10 });
    expect(server.seen[0]!.headers.prefer).toBe('wait=2');
  });

  it('wait() stops when its signal aborts, with the reason', async () => {
    server.script('hang');
    const controller = new AbortController();
    const waiting = client().tasks.wait('task_x', { signal: controller.signal });
    await waitFor(() => server.seen.length > 0, { timeoutMs: 5000, what: 'the long poll to arrive' });
    controller.abort(new Error('user went away'));
    await expect(waiting).rejects.toThrow('user went away');
  });

  it('cancel: a retry answered 409 after a lost answer reads the task and returns it when cancelled', async () => {
    server.script('reset', { status: 409, json: { message: 'Task is already finished.' } }, { status: 200, json: fakeTask({ status: 40 }) });
    expect((await client().tasks.cancel('task_x')).status).toBe(40);
    expect(server.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /api/tasks/task_x/cancel', 'POST /api/tasks/task_x/cancel', 'GET /api/tasks/task_x']);
  });

  it('cancel: a 409 on the first attempt is the answer', async () => {
    server.script({ status: 409, json: { message: 'Task is already finished.' } });
    await expect(client().tasks.cancel('task_x')).rejects.toMatchObject({ status: 409, message: 'Task is already finished.' });
    expect(server.seen).toHaveLength(1);
  });

  it('files.download: the exact bytes from the signed URL, without the API key', async () => {
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x10, 0x0a]);
    server.script(UNAVAILABLE, { status: 200, bytes, headers: { 'content-type': 'image/png' } });
    const got = await client().files.download({ url: `${server.url}/api/files/task_x/image.png?expires=1&signature=abc` });
    expect(got).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(got).equals(bytes)).toBe(true);
    expect(server.seen[1]!.url).toBe('/api/files/task_x/image.png?expires=1&signature=abc');
    // No header of ours (a browser would preflight a cross-origin request carrying one).
    expect(server.seen[1]!.headers['x-api-key']).toBeUndefined();
    expect(server.seen[1]!.headers['user-agent']).not.toMatch(/taskapi/);
    expect(server.seen[1]!.headers.accept).not.toBe('application/json');
  });

  it('files.download: its own timeoutMs; a body cut short by it is not restarted', async () => {
    server.script('partial', { status: 200, bytes: Buffer.from('x') });
    const err = await client({ timeoutMs: 60_000 })
      .files.download({ url: `${server.url}/api/files/task_x/video.mp4?expires=1&signature=abc` }, { timeoutMs: 300 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiTimeoutError);
    expect((err as Error).message).toMatch(/did not arrive in full within 300 ms/);
    expect(server.seen).toHaveLength(1);
    await expect(client().files.download({ url: server.url }, { timeoutMs: 0 })).rejects.toThrow(TypeError);
  });

  it('a caller-provided fetch is used', async () => {
    const calls: string[] = [];
    server.script({ status: 200, json: fakeTask() });
    const api = new TaskApi({ apiKey: 'k', baseUrl: server.url, fetch: (input, init) => (calls.push(String(input)), fetch(input, init)) });
    await api.tasks.get('task_x');
    expect(calls).toEqual([`${server.url}/api/tasks/task_x`]);
  });

  it('baseUrl defaults to TASKAPI_BASE_URL; a missing one is a clear error', async () => {
    const saved = process.env.TASKAPI_BASE_URL;
    try {
      process.env.TASKAPI_BASE_URL = server.url;
      server.script({ status: 200, json: fakeTask() });
      await new TaskApi({ apiKey: 'k' }).tasks.get('task_x');
      expect(server.seen).toHaveLength(1);
      delete process.env.TASKAPI_BASE_URL;
      expect(() => new TaskApi({ apiKey: 'k' })).toThrow('TaskApi needs a baseUrl (or the TASKAPI_BASE_URL environment variable).');
      expect(() => new TaskApi({ apiKey: '', baseUrl: server.url })).toThrow('TaskApi needs an apiKey.');
    } finally {
      if (saved === undefined) delete process.env.TASKAPI_BASE_URL;
      else process.env.TASKAPI_BASE_URL = saved;
    }
  });
});
