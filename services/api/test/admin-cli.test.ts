import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, type Database } from '@taskapi/db';
import { startPrivateRedis, TEST_DATABASE_URL, testEnv, uniqueEmail } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey } from './support/harness';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');

async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return adminWith({}, ...args);
}

async function adminWith(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // As operators run it: `npm run admin -- ...` (node on the built CLI; the suite's setup built it).
    const { stdout, stderr } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { env: { PATH: process.env.PATH, ...testEnv(env) }, cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('operator CLI (npm run admin)', () => {
  let db: Database;
  beforeAll(() => {
    db = createDatabase({ url: TEST_DATABASE_URL, poolSize: 1 });
  });
  afterAll(async () => {
    await db.close();
  });

  it('create-account, add-credits and grant-trial print one JSON object each', async () => {
    const email = uniqueEmail('cli');
    const created = await admin('create-account', '--email', email.toUpperCase(), '--password', 'a long password', '--credits', '50');
    expect(created.code).toBe(0);
    const account = JSON.parse(created.stdout);
    expect(account).toEqual({ account_id: expect.stringMatching(/^acct_/), email, paid_balance: 50 });

    const topped = await admin('add-credits', '--email', email, '--amount', '25');
    expect(topped.stderr).toBe('');
    expect(JSON.parse(topped.stdout)).toEqual({ paid_balance: 75 });

    const grant = await admin('grant-trial', '--email', email, '--quota', '100', '--expires-in-days', '14');
    const g = JSON.parse(grant.stdout);
    expect(g).toEqual({ grant_id: expect.stringMatching(/^grant_/), quota: 100, expires_at: expect.any(String) });
    expect(Math.round((new Date(g.expires_at).getTime() - Date.now()) / 86_400_000)).toBe(14);

    const at = await admin('grant-trial', '--email', email, '--quota', '5', '--expires-at', '2099-01-01T00:00:00Z');
    expect(JSON.parse(at.stdout)).toMatchObject({ quota: 5, expires_at: '2099-01-01T00:00:00.000Z' });

    const ledger = await db.prisma.creditLedgerEntry.findMany({ where: { accountId: account.account_id }, orderBy: { id: 'asc' } });
    expect(ledger.map((l) => [l.entryType, l.amount])).toEqual([
      ['topup', 50],
      ['topup', 25],
      ['trial_grant', 100],
      ['trial_grant', 5],
    ]);
  });

  it('exits non-zero with a clear message on bad input, and changes nothing', async () => {
    const email = uniqueEmail('cli');
    await admin('create-account', '--email', email, '--password', 'a long password');
    const cases: Array<[string[], number, RegExp]> = [
      [['create-account', '--email', email, '--password', 'a long password'], 1, /already exists/],
      [['create-account', '--email', 'not-an-email', '--password', 'a long password'], 1, /valid e-mail/],
      [['create-account', '--email', uniqueEmail(), '--password', 'short'], 1, /8 to 1024 characters/],
      [['create-account', '--email', uniqueEmail()], 2, /--password is required/],
      [['add-credits', '--email', email, '--amount', '-5'], 2, /--amount/],
      [['add-credits', '--email', email, '--amount', '2.5'], 2, /--amount must be a whole number/],
      [['add-credits', '--email', email, '--amount', '0'], 2, /at least 1/],
      [['add-credits', '--email', uniqueEmail(), '--amount', '5'], 1, /No account/],
      [['grant-trial', '--email', email, '--quota', '5'], 2, /exactly one of --expires-in-days or --expires-at/],
      [['grant-trial', '--email', email, '--quota', '5', '--expires-at', 'tomorrow'], 2, /ISO 8601/],
      [['grant-trial', '--email', email, '--quota', '5', '--expires-at', '2001-01-01'], 1, /in the future/],
      [['add-credits', '--email', email, '--amount', '5', '--quota', '3'], 2, /--quota does not apply/],
      [['delete-everything'], 2, /unknown command/],
    ];
    for (const [args, code, message] of cases) {
      const res = await admin(...args);
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code, stdout: '' });
      expect(res.stderr).toMatch(message);
    }
    const account = await db.prisma.account.findUniqueOrThrow({ where: { email } });
    expect(account.paidBalance).toBe(0);
    expect(await db.prisma.trialGrant.count({ where: { accountId: account.id } })).toBe(0);
  });

  it("set-max-running sets an account's own cap of running tasks, and --reset gives back the default in force", async () => {
    const email = uniqueEmail('cli');
    const { account_id: accountId } = JSON.parse((await admin('create-account', '--email', email, '--password', 'a long password')).stdout);
    const set = await admin('set-max-running', '--email', email.toUpperCase(), '--max', '3');
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(set.stdout)).toEqual({ account_id: accountId, max_running: 3 });
    expect((await db.prisma.account.findUniqueOrThrow({ where: { id: accountId } })).maxRunning).toBe(3);

    const reset = await adminWith({ ACCOUNT_MAX_RUNNING: '7' }, 'set-max-running', '--email', email, '--reset');
    expect(JSON.parse(reset.stdout)).toEqual({ account_id: accountId, max_running: 7 });
    expect((await db.prisma.account.findUniqueOrThrow({ where: { id: accountId } })).maxRunning).toBeNull();
    expect(JSON.parse((await admin('set-max-running', '--email', email, '--reset')).stdout)).toEqual({ account_id: accountId, max_running: 10 });
    expect(JSON.parse((await admin('set-max-running', '--email', email, '--max', '10000')).stdout)).toEqual({ account_id: accountId, max_running: 10000 });

    const cases: Array<[string[], number, RegExp]> = [
      [['set-max-running', '--email', email, '--max', '0'], 2, /--max must be a whole number of at least 1/],
      [['set-max-running', '--email', email, '--max=-2'], 2, /--max must be a whole number of at least 1/],
      [['set-max-running', '--email', email, '--max', 'ten'], 2, /--max must be a whole number/],
      [['set-max-running', '--email', email, '--max', '2.5'], 2, /--max must be a whole number/],
      [['set-max-running', '--email', email, '--max', '10001'], 2, /--max must be at most 10000/],
      [['set-max-running', '--email', email, '--max', '3', '--reset'], 2, /exactly one of --max or --reset/],
      [['set-max-running', '--email', email], 2, /exactly one of --max or --reset/],
      [['set-max-running', '--max', '3'], 2, /--email is required/],
      [['set-max-running', '--email', uniqueEmail(), '--max', '3'], 1, /No account/],
      [['set-max-running', '--email', 'not-an-email', '--reset'], 1, /valid e-mail/],
      [['set-max-running', '--email', email, '--max', '3', '--amount', '1'], 2, /--amount does not apply/],
    ];
    for (const [args, code, message] of cases) {
      const res = await admin(...args);
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code, stdout: '' });
      expect(res.stderr).toMatch(message);
    }
    expect((await db.prisma.account.findUniqueOrThrow({ where: { id: accountId } })).maxRunning).toBe(10000);
  });

  it('queues prints, per kind, what runs and what waits in the scheduler by account, most waiting first', async () => {
    // A Redis of its own, so the lines hold only this test's tasks; no worker: every task waits.
    const redis = await startPrivateRedis();
    const env = { REDIS_URL: redis.url };
    const api = await startApi(env);
    try {
      const [busy, quiet] = [await seedAccount(api, { credits: 100 }), await seedAccount(api, { credits: 100 })];
      const busyKey = await createKey(api, busy, { type: 'paid' });
      const quietKey = await createKey(api, quiet, { type: 'paid' });
      // The busy account's own cap of 2: of its 3 waiting tasks, 1 is held by it.
      await api.deps.taskLifecycle.capacity.setCaps(new Map([[busy.id, 2]]));
      for (let i = 0; i < 3; i++) await api.req('POST', '/api/tasks/image-generation', { headers: withKey(busyKey), body: { prompt: `busy ${i}` } });
      await api.req('POST', '/api/tasks/image-generation', { headers: withKey(quietKey), body: { prompt: 'quiet' } });

      const all = await adminWith(env, 'queues');
      expect({ code: all.code, stderr: all.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(all.stdout)).toEqual({
        kinds: {
          'video-generation': { running: 0, waiting: 0, accounts: [] },
          'image-generation': {
            running: 0,
            waiting: 4,
            accounts: [
              { account_id: busy.id, email: busy.email, running: 0, waiting: 3, held_by_cap: 1 },
              { account_id: quiet.id, email: quiet.email, running: 0, waiting: 1, held_by_cap: 0 },
            ],
          },
          'face-detection': { running: 0, waiting: 0, accounts: [] },
        },
      });
      const one = await adminWith(env, 'queues', '--kind', 'image-generation');
      expect(Object.keys(JSON.parse(one.stdout).kinds)).toEqual(['image-generation']);
      for (const [args, message] of [
        [['queues', '--kind', 'poetry'], /--kind must be one of video-generation, image-generation, face-detection/],
        [['queues', '--email', busy.email], /--email does not apply/],
      ] as const) {
        const res = await adminWith(env, ...args);
        expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 2, stdout: '' });
        expect(res.stderr).toMatch(message);
      }
    } finally {
      await api.close();
      await redis.stop();
    }
  });

  it('move-inputs-to-store copies images still held in PostgreSQL to the file store and clears them', async () => {
    const email = uniqueEmail('cli');
    const account = JSON.parse((await admin('create-account', '--email', email, '--password', 'a long password')).stdout);
    const keyId = `key_${randomBytes(8).toString('hex')}`;
    await db.pool.query("INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix) VALUES ($1, $2, 'paid', $3, 'x', 'sk-live-x')", [
      keyId,
      account.account_id,
      randomBytes(32).toString('hex'),
    ]);
    const publicId = `task_${randomBytes(12).toString('base64url')}`;
    const image = randomBytes(1000);
    // A row as the previous release wrote it: the image bytes in task_inputs.data.
    await db.pool.query(
      `WITH t AS (INSERT INTO tasks (public_id, account_id, api_key_id, kind, input, cost) VALUES ($1, $2, $3, 'face-detection', '{}', 1) RETURNING id)
       INSERT INTO task_inputs (task_id, content_type, data) SELECT id, 'image/png', $4 FROM t`,
      [publicId, account.account_id, keyId, image],
    );

    const moved = await admin('move-inputs-to-store');
    expect({ code: moved.code, stderr: moved.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(moved.stdout).moved).toBeGreaterThanOrEqual(1);
    const { rows } = await db.pool.query('SELECT i.in_store, i.data FROM task_inputs i JOIN tasks t ON t.id = i.task_id WHERE t.public_id = $1', [publicId]);
    expect(rows).toEqual([{ in_store: true, data: null }]);
    expect(fs.readFileSync(path.join(testEnv().FILES_DIR as string, 'inputs', publicId, 'image')).equals(image)).toBe(true);
  });
});
