import { TASK_QUEUES, WEBHOOK_QUEUE } from '@taskapi/queue';
import { ADMIN_DISABLED } from '../src/http/admin-auth';
import { startApi, type TestApi } from './support/harness';

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

describe('Bull Board at /admin/queues', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse battery' });
  });
  afterAll(() => api.close());

  it('asks for operator credentials and refuses wrong ones', async () => {
    const none = await api.req('GET', '/admin/queues');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await api.req('GET', '/admin/queues', { headers: basic('ops', 'wrong') })).status).toBe(401);
    expect((await api.req('GET', '/admin/queues/api/queues', { headers: basic('someone', 'correct horse battery') })).status).toBe(401);
  });

  it('shows every task queue and the webhook queue', async () => {
    const page = await api.req('GET', '/admin/queues', { headers: basic('ops', 'correct horse battery') });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const queues = await api.req('GET', '/admin/queues/api/queues', { headers: basic('ops', 'correct horse battery') });
    expect(queues.status).toBe(200);
    const names = (queues.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    expect(names).toEqual([...Object.values(TASK_QUEUES).map((q) => q.name), WEBHOOK_QUEUE.name].sort());
  });
});

describe('Bull Board without operator credentials', () => {
  it('is refused in production', async () => {
    const api = await startApi({ NODE_ENV: 'production' });
    try {
      const res = await api.req('GET', '/admin/queues');
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(ADMIN_DISABLED);
      expect((await api.req('GET', '/admin/queues/api/queues')).status).toBe(403);
    } finally {
      await api.close();
    }
  });
});
