// With the production default WEBHOOK_ALLOW_PRIVATE_NETWORKS=false, a callback_url that resolves
// to this machine is never contacted: each attempt is recorded as refused and the schedule runs out.
import fs from 'node:fs';
import path from 'node:path';
import { startHttpsReceiver, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startDispatcher, startSystem, startWorker, type Running, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const REDIS_DB = 9;

describe('webhook and image_url egress with private networks refused', () => {
  let system: TestSystem;
  let services: Running[] = [];
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    system = await startSystem(REDIS_DB, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_RETRY_DELAYS_MS: '100' });
    receiver = await startHttpsReceiver(() => ({ status: 200, body: fs.readFileSync(path.join(__dirname, '../fixtures/astronaut.png')) }));
    services = [await startWorker({ ...system.env, WORKER_KINDS: 'image-generation,face-detection' }), await startDispatcher(system.env)];
    account = await seedAccount(system.api, { credits: 100 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await receiver?.close();
    await system?.stop();
  });

  it('a callback to localhost is refused on every attempt and never reaches the receiver', async () => {
    const res = await system.api.req('POST', '/api/tasks/image-generation', {
      headers: withKey(key),
      body: { prompt: 'private', width: 64, height: 64, callback_url: receiver.url('/hooks') },
    });
    const publicId = res.body.public_id as string;
    const delivery = await waitFor(
      async () => {
        const d = (await system.api.req('GET', `/api/webhook-deliveries?public_id=${publicId}`, { headers: account.auth })).body.data[0];
        return d?.state === 'failed' ? d : undefined;
      },
      { what: 'the delivery to be given up' },
    );
    expect(delivery.attempts).toHaveLength(2);
    for (const attempt of delivery.attempts) {
      expect(attempt.status_code).toBeNull();
      expect(attempt.error).toBe('destination not allowed: localhost resolves to a private, loopback, link-local or reserved address');
    }
    expect(receiver.at('/hooks')).toHaveLength(0);
  });

  it('an image_url on localhost is refused: image_fetch_failed, refunded', async () => {
    const res = await system.api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: receiver.url('/image.png') } });
    const task = await waitForTask(system.api, key.plaintext, res.body.public_id);
    expect(task).toMatchObject({
      status: 30,
      error_code: 'image_fetch_failed',
      error_message: 'The image at image_url could not be fetched: the host resolves to a private address (not allowed).',
    });
    expect(receiver.at('/image.png')).toHaveLength(0);
  });
});
