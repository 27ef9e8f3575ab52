import fs from 'node:fs';
import path from 'node:path';
import { TaskStatus } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

describe('console task API (/api/console/tasks, session)', () => {
  let api: TestApi;
  let owner: TestAccount;
  let other: TestAccount;
  let key: CreatedKey;
  const ids: string[] = [];

  beforeAll(async () => {
    api = await startApi();
    owner = await seedAccount(api, { credits: 100, label: 'console-tasks' });
    other = await seedAccount(api, { credits: 10, label: 'console-tasks-other' });
    key = await createKey(api, owner, { type: 'paid' });
    for (const [kind, body] of [
      // Raw text, so the payload's number formatting reaches the server as written.
      ['image-generation', '{"prompt":"one","payload":{"n":1.50,"keep":"as sent"}}'],
      ['video-generation', { prompt: 'two', duration_seconds: 2 }],
      ['image-generation', { prompt: 'three', width: 128, height: 128 }],
    ] as const) {
      const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
      expect(res.status).toBe(201);
      ids.push(res.body.public_id);
    }
  });
  afterAll(async () => {
    await api.close();
  });

  it('lists exactly what GET /api/tasks lists, for every filter and page', async () => {
    for (const query of ['', '?limit=2', '?kind=image-generation', '?status=0', '?status=20,30', `?limit=1&cursor=${ids[2]}`]) {
      const viaKey = await api.req('GET', `/api/tasks${query}`, { headers: withKey(key) });
      const viaSession = await api.req('GET', `/api/console/tasks${query}`, { headers: owner.auth });
      expect({ query, status: viaSession.status, text: viaSession.text }).toEqual({ query, status: 200, text: viaKey.text });
      // Console reads are not API-key traffic: no rate-limit accounting.
      expect(viaSession.headers.get('ratelimit')).toBeNull();
    }
    const all = await api.req('GET', '/api/console/tasks', { headers: owner.auth });
    expect(all.body.data.map((t: any) => t.public_id)).toEqual([...ids].reverse());
    expect(all.text).toContain('"payload":{"n":1.50,"keep":"as sent"}');
  });

  it('refuses invalid queries with the task API\'s messages', async () => {
    for (const query of ['?limit=0', '?status=5', '?kind=nope', '?cursor=abc', `?cursor=${newId('task')}`, '?colour=red', '?limit=1&limit=2']) {
      const viaKey = await api.req('GET', `/api/tasks${query}`, { headers: withKey(key) });
      const viaSession = await api.req('GET', `/api/console/tasks${query}`, { headers: owner.auth });
      expect({ query, status: viaSession.status, body: viaSession.body }).toEqual({ query, status: 400, body: viaKey.body });
    }
  });

  it('gets one task; another account\'s task and malformed ids are "Task not found."', async () => {
    const viaKey = await api.req('GET', `/api/tasks/${ids[0]}`, { headers: withKey(key) });
    const viaSession = await api.req('GET', `/api/console/tasks/${ids[0]}`, { headers: owner.auth });
    expect(viaSession.status).toBe(200);
    expect(viaSession.text).toBe(viaKey.text);
    for (const [who, id] of [[other, ids[0]], [owner, newId('task')], [owner, 'task_%3Cscript%3E'], [owner, 'nope']] as const) {
      const res = await api.req('GET', `/api/console/tasks/${id}`, { headers: who.auth });
      expect({ id, status: res.status, body: res.body }).toEqual({ id, status: 404, body: { message: 'Task not found.' } });
    }
    expect((await api.req('GET', '/api/console/tasks', { headers: other.auth })).body).toEqual({ data: [], next_cursor: null });
  });

  it('serves a finished task\'s files to the session; file URLs point at the console route', async () => {
    const publicId = ids[2]!;
    const bytes = Buffer.from('\x89PNG\r\n\x1a\nnot really an image, but bytes are bytes');
    fs.mkdirSync(path.join(api.config.filesDir, publicId), { recursive: true });
    fs.writeFileSync(path.join(api.config.filesDir, publicId, 'image.png'), bytes);
    await api.deps.taskLifecycle.repair.end(publicId, { status: TaskStatus.completed, result: { ok: true }, files: [{ name: 'image.png', content_type: 'image/png', size: bytes.length }] });

    const task = await api.req('GET', `/api/console/tasks/${publicId}`, { headers: owner.auth });
    expect(task.body.files).toEqual([{ name: 'image.png', content_type: 'image/png', size: bytes.length, url: `${api.url}/api/console/tasks/${publicId}/files/image.png` }]);
    const keyTask = await api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(key) });
    expect(keyTask.body.files[0].url).toMatch(new RegExp(`^${api.url}/api/files/${publicId}/image\\.png\\?expires=\\d+&signature=`));

    const file = await fetch(task.body.files[0].url, { headers: owner.auth });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(bytes);
    const viaCookie = await fetch(task.body.files[0].url, { headers: { cookie: `session=${owner.token}` } });
    expect(viaCookie.status).toBe(200);
    await viaCookie.arrayBuffer();

    const missing = await api.req('GET', `/api/console/tasks/${publicId}/files/other.png`, { headers: owner.auth });
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 404, body: { message: 'File not found.' } });
    const foreign = await api.req('GET', `/api/console/tasks/${publicId}/files/image.png`, { headers: other.auth });
    expect({ status: foreign.status, body: foreign.body }).toEqual({ status: 404, body: { message: 'Task not found.' } });
    const withApiKey = await api.req('GET', `/api/console/tasks/${publicId}/files/image.png`, { headers: withKey(key) });
    expect(withApiKey.status).toBe(401);
  });
});
