import { PassThrough } from 'node:stream';
import { TEST_PASSWORD } from '@taskapi/testing';
import { accessLogLevel } from '../src/http/access-log-level';
import { createKey, seedAccount, seedGrant, startApi, withKey } from './support/harness';

/** An API whose log lines are collected and parsed. */
async function startLoggedApi(level: string) {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c.toString()));
  const api = await startApi({ LOG_LEVEL: level, ADMIN_USER: 'ops', ADMIN_PASSWORD: 'pw' }, { logStream: stream });
  const lines = async () => {
    await new Promise((r) => setImmediate(r));
    return chunks.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  return { api, lines };
}

const QUIET = ['/healthz', '/readyz', '/metrics', '/app/assets/common.js', '/docs/assets/swagger-ui.css', '/docs/init.js', '/admin/queues/static/images/logo.svg'];
const LOUD = ['/api/tasks', '/app', '/docs', '/admin/queues', '/api/openapi.json', '/nowhere'];

describe('logs', () => {
  it('have one JSON line per request with its id, and never a password, key, token or webhook secret', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    const api = await startApi({ LOG_LEVEL: 'debug' }, { logStream: stream });
    try {
      const account = await seedAccount(api, { credits: 100 });
      const paid = await createKey(api, account, { type: 'paid' });
      const grant = await seedGrant(api, account, 5);
      const trial = await createKey(api, account, { type: 'trial', grant_id: grant });
      const revealed = await api.req('POST', `/api/keys/${paid.id}/reveal`, { headers: account.auth });
      const secret = await api.req('GET', '/api/webhook-secret', { headers: account.auth });
      const rotated = await api.req('POST', '/api/webhook-secret/rotate', { headers: account.auth });
      const task = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(paid), body: { prompt: 'p' } });
      await api.req('GET', '/api/tasks', { headers: withKey(trial) });
      await api.req('GET', '/api/tasks', { headers: withKey(paid.plaintext.slice(0, -1) + 'X') });
      await api.req('POST', '/api/auth/login', { body: { email: account.email, password: 'my wrong password' } });
      const reissued = await api.req('POST', `/api/keys/${trial.id}/reissue`, { headers: account.auth });
      await new Promise((r) => setImmediate(r));

      const log = chunks.join('');
      const lines = log.trim().split('\n').map((l) => JSON.parse(l));
      const requests = lines.filter((l) => l.message === 'request');
      expect(requests.length).toBeGreaterThanOrEqual(10);
      for (const r of requests) expect(r.request_id).toMatch(/^req_/);
      expect(requests.find((r) => r.public_id === task.body.public_id)).toMatchObject({ status: 201, key_prefix: paid.prefix, account_id: account.id });

      const secrets = [
        TEST_PASSWORD,
        'my wrong password',
        account.token,
        paid.plaintext.slice(16),
        trial.plaintext.slice(16),
        revealed.body.plaintext_key.slice(16),
        reissued.body.plaintext_key.slice(16),
        secret.body.webhook_secret.slice(6),
        rotated.body.webhook_secret.slice(6),
      ];
      for (const s of secrets) expect(log).not.toContain(s);
    } finally {
      await api.close();
    }
  });

  describe('access-log level', () => {
    it('is debug for probes, metrics scrapes and static assets, info for the rest', () => {
      for (const path of QUIET) expect([path, accessLogLevel(path)]).toEqual([path, 'debug']);
      for (const path of [...LOUD, '/app/tasks', '/docs/assets', '/readyz/x', '/api/metrics']) expect([path, accessLogLevel(path)]).toEqual([path, 'info']);
    });

    it('at LOG_LEVEL=info, only the other requests are logged', async () => {
      const { api, lines } = await startLoggedApi('info');
      try {
        for (const path of [...QUIET, ...LOUD]) await api.req('GET', path);
        const logged = (await lines()).filter((l) => l.message === 'request').map((l) => l.path);
        expect(logged.sort()).toEqual([...LOUD].sort());
      } finally {
        await api.close();
      }
    });

    it('at LOG_LEVEL=debug, probes and assets are logged at debug level', async () => {
      const { api, lines } = await startLoggedApi('debug');
      try {
        for (const path of [...QUIET, '/api/tasks?limit=1']) await api.req('GET', path);
        const requests = (await lines()).filter((l) => l.message === 'request');
        for (const path of QUIET) expect(requests.find((l) => l.path === path)).toMatchObject({ level: 'debug', status: expect.any(Number) });
        expect(requests.find((l) => l.path === '/api/tasks')).toMatchObject({ level: 'info', status: 401 });
      } finally {
        await api.close();
      }
    });
  });
});
