import { PassThrough } from 'node:stream';
import { TEST_PASSWORD } from '@taskapi/testing';
import { createKey, seedAccount, seedGrant, startApi, withKey } from './support/harness';

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
});
