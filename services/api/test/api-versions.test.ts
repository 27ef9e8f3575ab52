// Dated API versions (docs/api.md, "Versions") through the public edge: the `TaskApi-Version`
// header on every /api answer, a bad one refused before authentication, answers that belong to no
// account carrying the newest version, the version pinned to an account, and (with an example change
// that only this file registers, never shipped) the transforms applied on the way in and out.
import { API_VERSION, TaskApi } from '../../../packages/client/src';
import { TaskStatus } from '@taskapi/domain';
import { NEWEST_VERSION, SHIPPED_VERSIONS, ApiVersions } from '../src/versions/registry';
import type { ApiVersionChange, VersionedResponse } from '../src/versions/version-change';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const FIRST = '2026-11-01';
const LATER = '2027-01-01';
const IMAGE = { prompt: 'a lighthouse', width: 64, height: 64 };

/** Renames `from` to `to` in every task object of a body: a task, a list's `data`, or an event's task. */
function renameTaskField(body: unknown, from: string, to: string): void {
  const tasks = Array.isArray((body as { data?: unknown })?.data) ? (body as { data: unknown[] }).data : [body];
  for (const task of tasks) {
    if (typeof task !== 'object' || task === null || !('public_id' in task) || !(from in task)) continue;
    const record = task as Record<string, unknown>;
    // Same position, new name: rebuild the object in its key order.
    const entries = Object.entries(record).map(([k, v]) => [k === from ? to : k, v] as const);
    for (const key of Object.keys(record)) delete record[key];
    Object.assign(record, Object.fromEntries(entries));
  }
}

/**
 * TEST ONLY, registered by this file: a pretend version 2027-01-01 in which the task's `price` was
 * renamed `cost` (the name the code speaks) and the list's `state` filter renamed `status`. A request
 * pinned to 2026-11-01 must keep seeing `price` and may keep sending `state`.
 */
const exampleChange: ApiVersionChange = {
  version: LATER,
  summary: 'Tasks: `price` is now `cost`; the list filter `state` is now `status`.',
  upgradeRequest(request) {
    if (request.route === '/api/tasks' && 'state' in request.query) {
      request.query.status = request.query.state;
      delete request.query.state;
    }
  },
  downgradeResponse(response: VersionedResponse) {
    if (response.route?.startsWith('/api/tasks') && response.status < 300) renameTaskField(response.body, 'cost', 'price');
  },
};

describe('TaskApi-Version', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 100, label: 'versions' });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('today the only version is 2026-11-01; the SDK was generated for it', () => {
    expect(SHIPPED_VERSIONS.map((v) => v.version)).toEqual([FIRST]);
    expect(NEWEST_VERSION).toBe(FIRST);
    expect(API_VERSION).toBe(NEWEST_VERSION);
  });

  it('a request that names the version gets it echoed; without one, its account\'s pinned version', async () => {
    const named = await api.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(key), 'taskapi-version': FIRST }, body: IMAGE });
    expect({ status: named.status, version: named.headers.get('taskapi-version') }).toEqual({ status: 201, version: FIRST });
    const read = await api.req('GET', `/api/tasks/${named.body.public_id}`, { headers: withKey(key) });
    expect({ status: read.status, version: read.headers.get('taskapi-version') }).toEqual({ status: 200, version: FIRST });
    // Console (session) endpoints and their errors too.
    const keys = await api.req('GET', '/api/keys', { headers: account.auth });
    expect({ status: keys.status, version: keys.headers.get('taskapi-version') }).toEqual({ status: 200, version: FIRST });
    const missing = await api.req('GET', '/api/tasks/task_doesnotexist000000000000', { headers: withKey(key) });
    expect({ status: missing.status, version: missing.headers.get('taskapi-version') }).toEqual({ status: 404, version: FIRST });
  });

  it('an account is pinned to the newest version when it is created, and the console session shows it', async () => {
    const fresh = await seedAccount(api, { label: 'versions-pinned' });
    const { rows } = await api.deps.db.pool.query<{ api_version: string }>('SELECT api_version FROM accounts WHERE id = $1', [fresh.id]);
    expect(rows[0]!.api_version).toBe(NEWEST_VERSION);
    const session = await api.req('GET', '/api/auth/session', { headers: fresh.auth });
    expect({ api_version: session.body.api_version, header: session.headers.get('taskapi-version') }).toEqual({ api_version: NEWEST_VERSION, header: NEWEST_VERSION });
  });

  it('a malformed version is a 400 naming the header, before authentication: with a bad key, without one, on console routes', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['/api/tasks/task_doesnotexist000000000000', withKey(key)],
      ['/api/tasks/task_doesnotexist000000000000', withKey('sk-live-notarealkeynotarealkeynotarealkey00')],
      ['/api/tasks', {}],
      ['/api/keys', {}],
      ['/api/usage?from=2026-11-01&to=2026-11-02', { 'x-api-key': 'anything' }],
      ['/api/no-such-endpoint', {}],
    ];
    for (const bad of ['yesterday', '2026-13-01', '2026-11-1', '2026-02-30', '20261101', ' ', '2026-11-01, 2026-11-01', 'latest']) {
      for (const [path, headers] of cases) {
        const res = await api.req('GET', path, { headers: { ...headers, 'taskapi-version': bad } });
        const expected = {
          message: `TaskApi-Version must be a date (YYYY-MM-DD) naming a version of this API, such as ${NEWEST_VERSION}.`,
          errors: [{ field: 'TaskApi-Version', message: `TaskApi-Version must be a date (YYYY-MM-DD) naming a version of this API, such as ${NEWEST_VERSION}` }],
        };
        expect({ bad, path, status: res.status, body: res.body, version: res.headers.get('taskapi-version') }).toEqual({ bad, path, status: 400, body: expected, version: NEWEST_VERSION });
      }
    }
  });

  it('a well-formed date that names no version is a 400 listing the versions, also before authentication', async () => {
    for (const unknown of ['2025-01-01', '2026-10-31', '2026-11-02', '2999-12-31']) {
      const res = await api.req('GET', '/api/tasks', { headers: { 'x-api-key': 'sk-live-bogus', 'taskapi-version': unknown } });
      expect({ status: res.status, message: res.body.message, version: res.headers.get('taskapi-version') }).toEqual({
        status: 400,
        message: `TaskApi-Version is not a version of this API; the versions are ${FIRST}.`,
        version: NEWEST_VERSION,
      });
    }
    // A task creation refused this way creates and charges nothing.
    const create = await api.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(key), 'taskapi-version': '2025-01-01' }, body: IMAGE });
    expect(create.status).toBe(400);
    const { rows } = await api.deps.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE account_id = $1', [account.id]);
    expect(rows[0]!.n).toBe(1);
  });

  it('answers that belong to no account carry the newest version; pages outside /api carry none', async () => {
    for (const [path, headers] of [
      ['/api/tasks', {}],
      ['/api/tasks', withKey('sk-live-notarealkeynotarealkeynotarealkey00')],
      ['/api/keys', {}],
      ['/api/nothing-here', {}],
      ['/api/openapi.json', {}],
    ] as Array<[string, Record<string, string>]>) {
      const res = await api.req('GET', path, { headers });
      expect({ path, version: res.headers.get('taskapi-version') }).toEqual({ path, version: NEWEST_VERSION });
    }
    expect((await api.req('GET', '/healthz')).headers.get('taskapi-version')).toBeNull();
  });

  it('the OpenAPI document states the version, the request header and the response header', async () => {
    const doc = (await api.req('GET', '/api/openapi.json')).body;
    expect(doc.info.version).toBe(NEWEST_VERSION);
    expect(doc.info['x-api-versions']).toEqual([FIRST]);
    const read = doc.paths['/api/tasks/{publicId}'].get;
    expect(read.parameters).toContainEqual(expect.objectContaining({ name: 'TaskApi-Version', in: 'header', required: false }));
    expect(read.responses['200'].headers['TaskApi-Version']).toEqual({ $ref: '#/components/headers/TaskApi-Version' });
    expect(read.responses['401'].headers['TaskApi-Version']).toEqual({ $ref: '#/components/headers/TaskApi-Version' });
    expect(JSON.stringify(read.responses['400'])).toContain('TaskApi-Version');
  });

  it('the SDK sends the version it was generated for on every request, and gets it back', async () => {
    const seen: Array<{ sent: string | null; answered: string | null }> = [];
    const client = new TaskApi({
      apiKey: key.plaintext,
      baseUrl: api.url,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        seen.push({ sent: new Headers(init?.headers).get('taskapi-version'), answered: res.headers.get('taskapi-version') });
        return res;
      },
    });
    const task = await client.tasks.create('image-generation', IMAGE);
    await client.tasks.get(task.public_id);
    await client.tasks.cancel(task.public_id);
    for await (const listed of client.tasks.list({ status: TaskStatus.cancelled })) expect(listed.status).toBe(TaskStatus.cancelled);
    expect(seen.length).toBeGreaterThanOrEqual(4);
    for (const s of seen) expect(s).toEqual({ sent: API_VERSION, answered: API_VERSION });
  });
});

describe('dated transforms (a test-only version 2027-01-01)', () => {
  let api: TestApi;
  /** Pinned to 2026-11-01, as every account created before 2027-01-01 would be. */
  let oldAccount: TestAccount;
  let oldKey: CreatedKey;
  /** Pinned to 2027-01-01. */
  let newAccount: TestAccount;
  let newKey: CreatedKey;

  beforeAll(async () => {
    api = await startApi({}, { deps: { apiVersions: new ApiVersions([...SHIPPED_VERSIONS, exampleChange]) } });
    oldAccount = await seedAccount(api, { credits: 100, label: 'versions-old' });
    oldKey = await createKey(api, oldAccount, { type: 'paid' });
    newAccount = await seedAccount(api, { credits: 100, label: 'versions-new' });
    // As an account created once 2027-01-01 had shipped (before its key is first used).
    await api.deps.db.pool.query('UPDATE accounts SET api_version = $2 WHERE id = $1', [newAccount.id, LATER]);
    newKey = await createKey(api, newAccount, { type: 'paid' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('the registry takes versions in date order only', () => {
    expect(() => new ApiVersions([exampleChange, ...SHIPPED_VERSIONS])).toThrow(/must come after/);
  });

  it('an account pinned to the old version gets the old shape by default, the new one when it asks', async () => {
    const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(oldKey), body: IMAGE });
    expect({ status: created.status, version: created.headers.get('taskapi-version'), price: created.body.price, cost: created.body.cost }).toEqual({
      status: 201,
      version: FIRST,
      price: 2,
      cost: undefined,
    });
    // The field keeps its place: only its name changes.
    const keys = Object.keys(created.body);
    expect(keys.indexOf('price')).toBe(keys.indexOf('callback_url') + 1);

    const id = created.body.public_id as string;
    const old = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(oldKey) });
    expect({ version: old.headers.get('taskapi-version'), price: old.body.price, cost: old.body.cost }).toEqual({ version: FIRST, price: 2, cost: undefined });
    const asked = await api.req('GET', `/api/tasks/${id}`, { headers: { ...withKey(oldKey), 'taskapi-version': LATER } });
    expect({ version: asked.headers.get('taskapi-version'), price: asked.body.price, cost: asked.body.cost }).toEqual({ version: LATER, price: undefined, cost: 2 });
    // The list's tasks, too.
    const list = await api.req('GET', '/api/tasks', { headers: withKey(oldKey) });
    expect(list.body.data.map((t: Record<string, unknown>) => [t.price, t.cost])).toEqual([[2, undefined]]);
  });

  it('an account pinned to the new version gets the new shape; it can still ask for the old one', async () => {
    const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(newKey), body: IMAGE });
    expect({ status: created.status, version: created.headers.get('taskapi-version'), price: created.body.price, cost: created.body.cost }).toEqual({
      status: 201,
      version: LATER,
      price: undefined,
      cost: 2,
    });
    const old = await api.req('GET', `/api/tasks/${created.body.public_id}`, { headers: { ...withKey(newKey), 'taskapi-version': FIRST } });
    expect({ version: old.headers.get('taskapi-version'), price: old.body.price }).toEqual({ version: FIRST, price: 2 });
  });

  it('requests are upgraded on the way in: the old filter name works for the old version only', async () => {
    const task = await api.req('POST', '/api/tasks/face-detection', { headers: withKey(oldKey), body: { image_url: 'https://images.example.test/a.jpg' } });
    await api.deps.taskLifecycle.repair.end(task.body.public_id, { status: TaskStatus.completed, result: { face_coordinates: [] } }, oldAccount.id);
    const old = await api.req('GET', '/api/tasks?state=20', { headers: withKey(oldKey) });
    expect({ status: old.status, ids: old.body.data.map((t: { public_id: string }) => t.public_id) }).toEqual({ status: 200, ids: [task.body.public_id] });
    const latest = await api.req('GET', '/api/tasks?state=20', { headers: { ...withKey(oldKey), 'taskapi-version': LATER } });
    expect({ status: latest.status, field: latest.body.errors?.[0]?.field }).toEqual({ status: 400, field: 'state' });
  });

  it("a task's event stream is shaped by the request's version too", async () => {
    const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(oldKey), body: IMAGE });
    expect((await api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(oldKey) })).status).toBe(200);
    const stream = await api.req('GET', `/api/tasks/${created.body.public_id}/events`, { headers: withKey(oldKey) });
    expect(stream.headers.get('taskapi-version')).toBe(FIRST);
    const events = stream.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect({ price: e.price, cost: e.cost }).toEqual({ price: 2, cost: undefined });
  });

  it("a read token's answers are shaped as its key's route: the account's pinned version, or the one the page names", async () => {
    const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(oldKey), body: IMAGE });
    const id = created.body.public_id as string;
    const { token } = (await api.req('POST', `/api/tasks/${id}/read-token`, { headers: withKey(oldKey) })).body;
    const bearer = { authorization: `Bearer ${token}` };
    const pinned = await api.req('GET', `/api/public/tasks/${id}`, { headers: bearer });
    expect({ version: pinned.headers.get('taskapi-version'), price: pinned.body.price, cost: pinned.body.cost }).toEqual({ version: FIRST, price: 2, cost: undefined });
    expect(pinned.text).toBe((await api.req('GET', `/api/tasks/${id}`, { headers: withKey(oldKey) })).text);
    const named = await api.req('GET', `/api/public/tasks/${id}`, { headers: { ...bearer, 'taskapi-version': LATER } });
    expect({ version: named.headers.get('taskapi-version'), price: named.body.price, cost: named.body.cost }).toEqual({ version: LATER, price: undefined, cost: 2 });
    expect((await api.req('POST', `/api/tasks/${id}/cancel`, { headers: withKey(oldKey) })).status).toBe(200);
    const stream = await api.req('GET', `/api/public/tasks/${id}/events?access_token=${token}`);
    const events = stream.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect({ price: e.price, cost: e.cost }).toEqual({ price: 2, cost: undefined });
  });

  it('answers that belong to no account carry the newest version (2027-01-01 here), unless the request named one', async () => {
    const none = await api.req('GET', '/api/tasks');
    expect({ status: none.status, version: none.headers.get('taskapi-version') }).toEqual({ status: 401, version: LATER });
    const named = await api.req('GET', '/api/tasks', { headers: { 'taskapi-version': FIRST } });
    expect({ status: named.status, version: named.headers.get('taskapi-version') }).toEqual({ status: 401, version: FIRST });
    const bad = await api.req('GET', '/api/tasks', { headers: { 'taskapi-version': '2026-12-01' } });
    expect({ status: bad.status, message: bad.body.message, version: bad.headers.get('taskapi-version') }).toEqual({
      status: 400,
      message: `TaskApi-Version is not a version of this API; the versions are ${FIRST}, ${LATER}.`,
      version: LATER,
    });
  });
});
