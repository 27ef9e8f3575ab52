// `tasks.events(id)`: against a local server that streams, drops and refuses on purpose (how the
// iterator parses, reconnects, gives up and stops), then against the real API on PostgreSQL and
// Redis, with the task moved the way a worker moves it.
import { TaskStatus } from '@taskapi/domain';
import { StatusMarkers } from '@taskapi/task-lifecycle';
import { waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi } from '../../../services/api/test/support/harness';
import { TaskApi, TaskApiConnectionError, TaskApiError, type Task } from '../src';
import { fakeTask, startScriptedServer, taskEvent, type ScriptedServer } from './support/scripted-server';

const ID = 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd';

async function collect(iterable: AsyncIterable<Task>, seen: Task[] = []): Promise<Task[]> {
  for await (const task of iterable) seen.push(task);
  return seen;
}

describe('tasks.events() over HTTP', () => {
  let server: ScriptedServer;
  const client = () => new TaskApi({ apiKey: 'sk-test-abc', baseUrl: server.url });

  beforeEach(async () => {
    server = await startScriptedServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('yields each task event (comments and other events skipped) and ends after a terminal task', async () => {
    server.script({
      sse: [
        taskEvent(fakeTask({ status: 0, progress: null })),
        ': keep-alive\n\n',
        'event: other\ndata: {}\n\n',
        // An event split across chunks.
        taskEvent(fakeTask({ status: 10, progress: 0.5 })).slice(0, 30),
        taskEvent(fakeTask({ status: 10, progress: 0.5 })).slice(30),
        taskEvent(fakeTask({ status: 20, progress: 1 })),
      ],
      then: 'hang',
    });
    const tasks = await collect(client().tasks.events(ID));
    expect(tasks.map((t) => [t.status, t.progress])).toEqual([
      [0, null],
      [10, 0.5],
      [20, 1],
    ]);
    const [req] = server.seen;
    expect(req).toMatchObject({ method: 'GET', url: `/api/tasks/${ID}/events` });
    expect(req!.headers['x-api-key']).toBe('sk-test-abc');
    expect(req!.headers.accept).toBe('text/event-stream');
    // The iterator ended: it closed the connection the server kept open.
    await waitFor(() => server.closedByClient === 1, { what: 'the connection to be closed' });
  });

  it('reopens a dropped connection (closed, reset) and skips the repeated first event', async () => {
    const queued = taskEvent(fakeTask({ status: 0 }));
    const running = taskEvent(fakeTask({ status: 10, progress: 0.2 }));
    server.script({ sse: [queued], then: 'end' }, { sse: [queued, running], then: 'reset' }, { sse: [running, taskEvent(fakeTask({ status: 30 }))], then: 'end' });
    const tasks = await collect(client().tasks.events(ID));
    expect(tasks.map((t) => t.status)).toEqual([0, 10, 30]);
    expect(server.seen).toHaveLength(3);
  });

  it('reopens after 503 and 429 (waiting out Retry-After), then gives up after maxReconnects in a row', async () => {
    server.script(
      { status: 503, json: { message: 'This server cannot open a task event stream right now. Please retry shortly.' } },
      { status: 429, headers: { 'retry-after': '1' }, json: { message: 'Rate limit exceeded.', retry_after: 1 } },
      { sse: [taskEvent(fakeTask({ status: 40 }))], then: 'end' },
    );
    expect((await collect(client().tasks.events(ID))).map((t) => t.status)).toEqual([40]);
    expect(server.seen[2]!.at - server.seen[1]!.at).toBeGreaterThanOrEqual(950);

    server.seen.length = 0;
    server.script('reset', 'reset', 'reset');
    const err = await collect(client().tasks.events(ID, { maxReconnects: 2 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiConnectionError);
    expect(server.seen).toHaveLength(3);
  });

  it('a 4xx other than 429 is thrown at once, with the API message', async () => {
    server.script({ status: 404, json: { message: 'Task not found.' } });
    const err = await collect(client().tasks.events('task_AAAAAAAAAAAAAAAAAAAAAA')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err).toMatchObject({ status: 404, message: 'Task not found.', requestId: 'req_test1' });
    expect(server.seen).toHaveLength(1);
  });

  it('a connection that goes quiet for idleTimeoutMs is reopened', async () => {
    server.script({ sse: [taskEvent(fakeTask({ status: 10 }))], then: 'hang' }, { sse: [taskEvent(fakeTask({ status: 20 }))], then: 'end' });
    const tasks = await collect(client().tasks.events(ID, { idleTimeoutMs: 300 }));
    expect(tasks.map((t) => t.status)).toEqual([10, 20]);
    expect(server.seen).toHaveLength(2);
  });

  it('its signal ends the iteration with the reason and closes the connection; so does leaving the loop', async () => {
    server.script({ sse: [taskEvent(fakeTask({ status: 0 }))], then: 'hang' });
    const controller = new AbortController();
    const seen: Task[] = [];
    const iterating = collect(client().tasks.events(ID, { signal: controller.signal }), seen);
    await waitFor(() => seen.length === 1, { what: 'the first event' });
    controller.abort(new Error('user went away'));
    await expect(iterating).rejects.toThrow('user went away');
    await waitFor(() => server.closedByClient === 1, { what: 'the connection to be closed' });

    server.script({ sse: [taskEvent(fakeTask({ status: 10 }))], then: 'hang' });
    for await (const task of client().tasks.events(ID)) {
      expect(task.status).toBe(10);
      break;
    }
    await waitFor(() => server.closedByClient === 2, { what: 'the connection to be closed' });
  });

  it('checks its options', async () => {
    await expect(client().tasks.events(ID, { maxReconnects: -1 }).next()).rejects.toThrow(TypeError);
    await expect(client().tasks.events(ID, { idleTimeoutMs: 0 }).next()).rejects.toThrow(TypeError);
    expect(server.seen).toHaveLength(0);
  });
});

describe('tasks.events() against the API', () => {
  it('follows a task from queued through its progress to completed', async () => {
    const api = await startApi();
    try {
      const account = await seedAccount(api, { credits: 10 });
      const key = await createKey(api, account, { type: 'paid' });
      const sdk = new TaskApi({ apiKey: key.plaintext, baseUrl: api.url });
      const created = await sdk.tasks.create('face-detection', { image_url: 'https://example.com/a.jpg' });
      expect(created.progress).toBeNull();
      const seen: Task[] = [];
      const following = collect(sdk.tasks.events(created.public_id), seen);
      await waitFor(() => seen.length === 1, { what: 'the first event' });
      await api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [created.public_id]);
      await new StatusMarkers(api.deps.redis).status(account.id, created.public_id, TaskStatus.processing);
      await waitFor(() => seen.at(-1)?.status === 10, { what: 'status 10' });
      await new StatusMarkers(api.deps.redis).progress(account.id, created.public_id, 0.6);
      await waitFor(() => seen.at(-1)?.progress === 0.6, { what: 'progress 0.6' });
      await api.deps.taskLifecycle.repair.end(created.public_id, { status: TaskStatus.completed, result: { face_coordinates: [] } });
      const tasks = await following;
      expect(tasks.map((t) => [t.status, t.progress])).toEqual([
        [0, null],
        [10, null],
        [10, 0.6],
        [20, 1],
      ]);
      expect(tasks.at(-1)).toEqual(await sdk.tasks.get(created.public_id));
      const unknown = await collect(sdk.tasks.events('task_AAAAAAAAAAAAAAAAAAAAAA')).catch((e: unknown) => e);
      expect(unknown).toMatchObject({ status: 404, message: 'Task not found.' });
      expect(api.deps.taskWaiters.size).toBe(0);
    } finally {
      await api.close();
    }
  });
});
