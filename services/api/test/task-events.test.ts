// Task event streams (`GET /api/tasks/{publicId}/events`, and the console's) and the `progress` of
// the task JSON, against a real API on PostgreSQL and Redis. Tasks are moved the way the worker
// moves them: a committed status change recorded in its marker (the lifecycle's StatusMarkers),
// progress written the same way, terminal transitions through the lifecycle (`repair.end`).
import { createParser } from 'eventsource-parser';
import { TaskStatus } from '@taskapi/domain';
import { StatusMarkers, type FinishTaskInput } from '@taskapi/task-lifecycle';
import { parseMetrics, waitFor } from '@taskapi/testing';
import { API_ERRORS } from '../src/errors';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

interface StreamEvent {
  kind: 'task' | 'comment';
  /** The task JSON (task events) or the comment's text. */
  data: string;
  task?: any;
  at: number;
}

/** An event stream as a client reads it: every event and comment as it arrives, and when the server closed it. */
interface OpenStream {
  status: number;
  headers: Headers;
  /** The body as received (error answers: their JSON). */
  text: string;
  events: StreamEvent[];
  tasks(): any[];
  /** Settles when the server ends the body: 'ended' (cleanly) or 'broken'. */
  closed: Promise<'ended' | 'broken'>;
  /** Drops the connection, as a client that goes away. */
  abort(): void;
}

async function openStream(api: TestApi, path: string, headers: Record<string, string>, method = 'GET'): Promise<OpenStream> {
  const controller = new AbortController();
  const res = await fetch(`${api.url}${path}`, { method, headers, signal: controller.signal });
  const stream: OpenStream = {
    status: res.status,
    headers: res.headers,
    text: '',
    events: [],
    tasks: () => stream.events.filter((e) => e.kind === 'task').map((e) => e.task),
    closed: Promise.resolve('ended'),
    abort: () => controller.abort(),
  };
  const parser = createParser({
    onEvent: (e) => stream.events.push({ kind: 'task', data: e.data, task: e.event === 'task' ? JSON.parse(e.data) : undefined, at: Date.now() }),
    onComment: (text) => stream.events.push({ kind: 'comment', data: text, at: Date.now() }),
  });
  const decoder = new TextDecoder();
  stream.closed = (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        stream.text += text;
        parser.feed(text);
      }
      return 'ended' as const;
    } catch {
      return 'broken' as const;
    }
  })();
  return stream;
}

describe('task event streams', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  beforeAll(async () => {
    api = await startApi({ RATE_LIMIT_PAID_PER_MINUTE: '100000' }, { deps: { taskEventTimings: { keepAliveMs: 200 } } });
    account = await seedAccount(api, { credits: 100_000 });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api.close();
  });

  const create = async () => (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
  /** What a worker does when it claims a task: the committed status, then its marker and announcement. */
  const start = async (id: string) => {
    await api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [id]);
    await new StatusMarkers(api.deps.redis).status(account.id, id, TaskStatus.processing);
  };
  const finish = (id: string, input: FinishTaskInput = { status: TaskStatus.completed, result: { face_coordinates: [] } }) =>
    api.deps.taskLifecycle.repair.end(id, input);
  const progress = (id: string, value: number) => new StatusMarkers(api.deps.redis).progress(account.id, id, value);
  const events = (id: string) => openStream(api, `/api/tasks/${id}/events`, withKey(key));
  const held = (n: number) => waitFor(() => api.deps.taskWaiters.size === n, { what: `${n} held requests` });
  const taskEvent = (stream: OpenStream, match: (task: any) => boolean, what: string) =>
    waitFor(() => stream.tasks().find(match), { what: `an event with ${what}; got ${JSON.stringify(stream.tasks().map((t) => [t.status, t.progress]))}` });

  it('sends the task at once, as GET shows it, as an `event: task` on one line, with streaming headers', async () => {
    const id = await create();
    const stream = await events(id);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.headers.get('cache-control')).toBe('no-cache');
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    const [first] = await waitFor(() => stream.tasks().length > 0 && stream.tasks());
    const got = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    expect(first).toEqual(got.body);
    expect(first).toMatchObject({ public_id: id, status: 0, progress: null });
    expect(stream.text.startsWith(`event: task\ndata: ${got.text}\n\n`)).toBe(true);
    stream.abort();
    await held(0);
  });

  it("hears a worker's start even when a reader seeded the status marker first (from the committed row)", async () => {
    const id = await create();
    const stream = await events(id);
    await taskEvent(stream, (t) => t.status === 0, 'status 0');
    await api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [id]);
    // A read between the worker's commit and its marker write seeds the marker, announcing nothing.
    await new StatusMarkers(api.deps.redis).seed(account.id, id, TaskStatus.processing);
    await new StatusMarkers(api.deps.redis).status(account.id, id, TaskStatus.processing);
    await taskEvent(stream, (t) => t.status === 10, 'status 10');
    stream.abort();
    await held(0);
  });

  it('sends each status change and the terminal state, then the server closes the stream', async () => {
    const id = await create();
    const stream = await events(id);
    await held(1);
    await start(id);
    await taskEvent(stream, (t) => t.status === 10, 'status 10');
    await finish(id);
    expect(await stream.closed).toBe('ended');
    const tasks = stream.tasks();
    expect(tasks.map((t) => t.status)).toEqual([0, 10, 20]);
    expect(tasks.at(-1)).toMatchObject({ status: 20, progress: 1, result: { face_coordinates: [] } });
    await held(0);
  });

  it('coalesces progress changes to at most two events a second; the last value always arrives', async () => {
    const id = await create();
    await start(id);
    const stream = await events(id);
    await taskEvent(stream, (t) => t.status === 10, 'status 10');
    const began = Date.now();
    for (let i = 1; i <= 9; i++) await progress(id, i / 10);
    const burstMs = Date.now() - began;
    await taskEvent(stream, (t) => t.progress === 0.9, 'progress 0.9');
    const sent = stream.tasks().filter((t) => t.progress !== null);
    // Every value sent was written, in order; the burst was shorter than a few intervals, so few got through.
    expect(sent.map((t) => t.progress)).toEqual(sent.map((t) => t.progress as number).sort((x, y) => x - y));
    expect(sent.length).toBeLessThanOrEqual(2 + Math.floor(burstMs / 500));
    expect(sent.at(-1)!.progress).toBe(0.9);
    // A value the stream already sent is not sent again.
    await progress(id, 0.9);
    await progress(id, 0.95);
    await taskEvent(stream, (t) => t.progress === 0.95, 'progress 0.95');
    expect(stream.tasks().filter((t) => t.progress === 0.9)).toHaveLength(1);
    await finish(id);
    expect(await stream.closed).toBe('ended');
  });

  it('a run reporting progress every 50 ms is streamed at about two events a second', async () => {
    const id = await create();
    await start(id);
    const stream = await events(id);
    await taskEvent(stream, (t) => t.status === 10, 'status 10');
    const began = Date.now();
    for (let i = 1; i <= 30; i++) {
      await progress(id, i / 100);
      // The engine's pace, not a wait for a condition.
      await new Promise((r) => setTimeout(r, 50));
    }
    const reportedMs = Date.now() - began;
    await taskEvent(stream, (t) => t.progress === 0.3, 'progress 0.3');
    const sent = stream.tasks().filter((t) => t.progress !== null).length;
    expect(sent).toBeGreaterThanOrEqual(2);
    expect(sent).toBeLessThanOrEqual(2 + Math.floor(reportedMs / 500));
    stream.abort();
  });

  it('sends a keep-alive comment on the configured interval', async () => {
    const id = await create();
    const stream = await events(id);
    await waitFor(() => stream.events.filter((e) => e.kind === 'comment').length >= 2, { what: 'two keep-alive comments' });
    expect(stream.events.find((e) => e.kind === 'comment')!.data).toBe('keep-alive');
    expect(stream.text).toContain('\n: keep-alive\n\n');
    stream.abort();
  });

  it('a task already terminal: its one event, then the stream ends', async () => {
    const id = await create();
    await finish(id, { status: TaskStatus.failed, errorCode: 'engine_error', errorMessage: 'The engine failed.', progress: 0.4 });
    const stream = await events(id);
    expect(await stream.closed).toBe('ended');
    expect(stream.tasks()).toEqual([expect.objectContaining({ status: 30, progress: 0.4, error_code: 'engine_error' })]);
    await held(0);
  });

  it('404 with the same JSON as GET for an unknown id, a malformed id and another account\'s task', async () => {
    const other = await seedAccount(api, { credits: 100 });
    const otherKey = await createKey(api, other, { type: 'paid' });
    const theirs = (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(otherKey), body: { image_url: 'https://example.com/b.jpg' } })).body.public_id as string;
    for (const id of ['task_AAAAAAAAAAAAAAAAAAAAAA', theirs, 'task_nope', 'x']) {
      const stream = await events(id);
      await stream.closed;
      const get = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
      expect({ id, status: stream.status, text: stream.text }).toEqual({ id, status: 404, text: get.text });
      expect(JSON.parse(stream.text)).toEqual({ message: API_ERRORS.TASK_NOT_FOUND.message });
    }
    expect(api.deps.taskWaiters.size).toBe(0);
  });

  it('the request-duration histogram ends at the stream\'s headers; how long streams stay open is measured apart', async () => {
    const series = async () => {
      const samples = parseMetrics((await api.req('GET', '/metrics')).text);
      const value = (name: string, labels: Record<string, string>) =>
        samples.find((m) => m.name === name && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value ?? 0;
      const route = '/api/tasks/{publicId}/events';
      return {
        requestSeconds: value('taskapi_http_request_duration_seconds_sum', { method: 'GET', route }),
        requests: value('taskapi_http_request_duration_seconds_count', { method: 'GET', route }),
        streamSeconds: value('taskapi_event_stream_duration_seconds_sum', { route }),
        streams: value('taskapi_event_stream_duration_seconds_count', { route }),
      };
    };
    const before = await series();
    // One stream ended by the server (its task finished), one by its client going away.
    const ended = await create();
    const gone = await create();
    const endedStream = await events(ended);
    const goneStream = await events(gone);
    await held(2);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await finish(ended);
    expect(await endedStream.closed).toBe('ended');
    goneStream.abort();
    await held(0);
    const after = await waitFor(async () => {
      const now = await series();
      return now.streams - before.streams === 2 ? now : undefined;
    }, { what: 'both streams measured' });
    expect(after.requests - before.requests).toBe(2);
    // Held for 400 ms or more, yet each request took only as long as opening its stream.
    expect(after.streamSeconds - before.streamSeconds).toBeGreaterThanOrEqual(0.8);
    expect(after.requestSeconds - before.requestSeconds).toBeLessThan(0.4);
  });

  it('a client that disconnects frees its place', async () => {
    const id = await create();
    const stream = await events(id);
    await held(1);
    stream.abort();
    await held(0);
  });

  it('counts once against the rate limit, and holds no database query while nothing happens', async () => {
    const id = await create();
    const remaining = (h: Headers) => Number(/"minute";r=(\d+)/.exec(h.get('ratelimit') ?? '')?.[1]);
    const before = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    const stream = await events(id);
    await waitFor(() => stream.tasks().length === 1);
    expect(remaining(stream.headers)).toBe(remaining(before.headers) - 1);
    // The replica's own expiry sweep (a statement every 500 ms, not the stream's) would be counted too.
    await api.deps.expirySweep.stop();
    const pool = api.deps.db.pool;
    const queries = { count: 0 };
    const query = pool.query.bind(pool);
    (pool as any).query = (...args: any[]) => {
      queries.count++;
      return (query as any)(...args);
    };
    try {
      // Keep-alives go out meanwhile (every 200 ms here); a polling stream would query.
      await waitFor(() => stream.events.filter((e) => e.kind === 'comment').length >= 3, { what: 'three keep-alives' });
      expect(queries.count).toBe(0);
    } finally {
      (pool as any).query = query;
    }
    stream.abort();
    const after = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    expect(remaining(after.headers)).toBe(remaining(before.headers) - 2);
  });

  it('a terminal state missed while the subscriber was reconnecting is sent once it is subscribed again', async () => {
    const id = await create();
    const stream = await events(id);
    await held(1);
    await waitFor(() => stream.tasks().length === 1);
    const reconnected = new Promise((r) => api.deps.subscriber.once('ready', r));
    // Its event is published while the subscription is down: lost; the recheck reads the task.
    api.deps.subscriber.disconnect(true);
    await finish(id);
    await reconnected;
    expect(await stream.closed).toBe('ended');
    expect(stream.tasks().map((t) => t.status)).toEqual([0, 20]);
    await held(0);
  });

  it('HEAD: the headers, no body, nothing held', async () => {
    const id = await create();
    const res = await fetch(`${api.url}/api/tasks/${id}/events`, { method: 'HEAD', headers: withKey(key) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(await res.text()).toBe('');
    await held(0);
  });

  it('the console streams a task to its session, with console file links; API keys are refused there', async () => {
    const id = await create();
    const stream = await openStream(api, `/api/console/tasks/${id}/events`, account.auth);
    expect(stream.status).toBe(200);
    await finish(id, { status: TaskStatus.completed, result: { face_coordinates: [] }, files: [{ name: 'out.png', content_type: 'image/png', size: 3 }] });
    expect(await stream.closed).toBe('ended');
    const last = stream.tasks().at(-1);
    expect(last).toMatchObject({ status: 20, progress: 1 });
    expect(last.files[0].url).toBe(`${api.url}/api/console/tasks/${id}/files/out.png`);
    const refused = await openStream(api, `/api/console/tasks/${id}/events`, withKey(key));
    expect(refused.status).toBe(401);
    const other = await seedAccount(api, { credits: 0 });
    const theirs = await openStream(api, `/api/console/tasks/${id}/events`, other.auth);
    await theirs.closed;
    expect({ status: theirs.status, body: JSON.parse(theirs.text) }).toEqual({ status: 404, body: { message: API_ERRORS.TASK_NOT_FOUND.message } });
  });
});

describe('task event streams: limits and shutdown', () => {
  it('refuses a stream over the account limit (429) and over the process limit (503), with Retry-After', async () => {
    const api = await startApi({}, { deps: { heldRequests: { max: 2, perAccount: 1 } } });
    const opened: OpenStream[] = [];
    try {
      const stream = async () => {
        const account = await seedAccount(api, { credits: 10 });
        const key = await createKey(api, account, { type: 'paid' });
        const id = (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
        const open = async () => {
          const s = await openStream(api, `/api/tasks/${id}/events`, withKey(key));
          opened.push(s);
          return s;
        };
        return { key, id, open };
      };
      const a = await stream();
      expect((await a.open()).status).toBe(200);
      const refused = await a.open();
      await refused.closed;
      expect({ status: refused.status, retryAfter: refused.headers.get('retry-after'), body: JSON.parse(refused.text) }).toEqual({
        status: 429,
        retryAfter: '1',
        body: { message: API_ERRORS.TOO_MANY_TASK_STREAMS.message },
      });
      // `Prefer: wait` shares the places: the account's is taken, so it answers at once.
      const waited = await api.req('GET', `/api/tasks/${a.id}`, { headers: { ...withKey(a.key), prefer: 'wait=30' } });
      expect(waited.headers.get('preference-applied')).toBeNull();
      const b = await stream();
      expect((await b.open()).status).toBe(200);
      const c = await stream();
      const full = await c.open();
      await full.closed;
      expect({ status: full.status, retryAfter: full.headers.get('retry-after'), body: JSON.parse(full.text) }).toEqual({
        status: 503,
        retryAfter: '1',
        body: { message: API_ERRORS.TASK_STREAMS_UNAVAILABLE.message },
      });
      // A place given back is usable again.
      opened[0]!.abort();
      await waitFor(() => api.deps.taskWaiters.size === 1);
      expect((await c.open()).status).toBe(200);
    } finally {
      for (const s of opened) s.abort();
      await api.close();
    }
  });

  it('shutdown ends open streams cleanly, and refuses new ones with 503', async () => {
    const api = await startApi();
    try {
      const account = await seedAccount(api, { credits: 10 });
      const key = await createKey(api, account, { type: 'paid' });
      const id = (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
      const streams = await Promise.all([1, 2].map(() => openStream(api, `/api/tasks/${id}/events`, withKey(key))));
      await waitFor(() => api.deps.taskWaiters.size === 2 && streams.every((s) => s.tasks().length === 1));
      api.deps.taskWaiters.close();
      expect(await Promise.all(streams.map((s) => s.closed))).toEqual(['ended', 'ended']);
      expect(api.deps.taskWaiters.size).toBe(0);
      const later = await openStream(api, `/api/tasks/${id}/events`, withKey(key));
      await later.closed;
      expect(later.status).toBe(503);
      expect(JSON.parse(later.text)).toEqual({ message: API_ERRORS.TASK_STREAMS_UNAVAILABLE.message });
    } finally {
      await api.close();
    }
  });
});

describe('progress in the task JSON', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 1_000 });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api.close();
  });

  const create = async () => (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body;
  const start = async (id: string) => {
    await api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [id]);
    await new StatusMarkers(api.deps.redis).status(account.id, id, TaskStatus.processing);
  };
  const get = async (id: string) => (await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) })).body;
  const listed = async (id: string) => ((await api.req('GET', '/api/tasks?limit=100', { headers: withKey(key) })).body.data as any[]).find((t) => t.public_id === id);
  const consoleTask = async (id: string) => (await api.req('GET', `/api/console/tasks/${id}`, { headers: account.auth })).body;

  it('null while queued, the reported value while running, 1 once completed: in GET, the list and the console', async () => {
    const created = await create();
    const id = created.public_id as string;
    expect(created.progress).toBeNull();
    expect((await get(id)).progress).toBeNull();
    await start(id);
    expect((await get(id)).progress).toBeNull();
    await new StatusMarkers(api.deps.redis).progress(account.id, id, 0.42);
    expect((await get(id)).progress).toBe(0.42);
    expect((await listed(id)).progress).toBe(0.42);
    expect((await consoleTask(id)).progress).toBe(0.42);
    await api.deps.taskLifecycle.repair.end(id, { status: TaskStatus.completed, result: { face_coordinates: [] } });
    expect((await get(id)).progress).toBe(1);
    expect((await listed(id)).progress).toBe(1);
  });

  it('a cancel keeps the progress reached, frozen there', async () => {
    const id = (await create()).public_id as string;
    await start(id);
    await new StatusMarkers(api.deps.redis).progress(account.id, id, 0.3);
    const cancelled = await api.req('POST', `/api/tasks/${id}/cancel`, { headers: withKey(key) });
    expect(cancelled.body).toMatchObject({ status: 40, progress: 0.3 });
    // The run, not yet stopped, reports more: the cancelled task does not move.
    await new StatusMarkers(api.deps.redis).progress(account.id, id, 0.6);
    expect((await get(id)).progress).toBe(0.3);
    expect((await listed(id)).progress).toBe(0.3);
    const queued = (await create()).public_id as string;
    expect((await api.req('POST', `/api/tasks/${queued}/cancel`, { headers: withKey(key) })).body.progress).toBeNull();
  });
});
