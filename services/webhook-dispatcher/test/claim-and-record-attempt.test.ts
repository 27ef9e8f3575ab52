// The dispatcher's write-ahead record of attempts, at the domain functions, on real PostgreSQL: a
// number is claimed before its POST leaves and only as the delivery's next number after a recorded
// attempt, so it is sent once; a claimed attempt's result is recorded exactly once. In a database of
// this file's own.
import pg from 'pg';
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { claimAndLoad, claimAttempt, loadDelivery, recordAttempt, type AttemptRecord } from '../src/repositories/deliveries';
import { attemptsOf, deliveryRowOf, seedAccount, seedDelivery } from './support/deliveries';

const DATABASE_URL = testDatabaseUrl('dispatcher_claims');
const HOUR_MS = 3_600_000;

let pool: pg.Pool;
let accountId: string;

beforeAll(async () => {
  await recreateDatabase(DATABASE_URL);
  pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 });
  accountId = await seedAccount(pool, 'v1.ciphertext-of-the-current-secret');
}, 60_000);

afterAll(async () => {
  await pool?.end();
});

/** A fresh pending delivery of the account, no attempt made. */
const newDelivery = async () => (await seedDelivery(pool, accountId)).deliveryId;

/** The result of attempt `attempt`: delivered, or failed with a retry in an hour, or given up. */
function outcome(deliveryId: string, attempt: number, state: AttemptRecord['state']): AttemptRecord {
  const ok = state === 'succeeded';
  return {
    deliveryId,
    attempt,
    durationMs: 42,
    statusCode: ok ? 204 : 503,
    error: ok ? null : 'HTTP 503',
    responseExcerpt: ok ? null : 'busy',
    state,
    retryInMs: state === 'pending' ? HOUR_MS : null,
  };
}

describe('claiming an attempt number before the POST', () => {
  it('writes the attempt in flight and moves the count before anything is sent', async () => {
    const id = await newDelivery();
    const startedAt = new Date('2026-01-02T03:04:05.678Z');
    expect(await claimAttempt(pool, id, 1, startedAt)).toBe(true);

    expect(await attemptsOf(pool, id)).toEqual([
      { attempt_number: 1, started_at: startedAt, duration_ms: 0, status_code: null, error: null, response_excerpt: null, in_flight: true },
    ]);
    expect(await loadDelivery(pool, id)).toMatchObject({ state: 'pending', attempt_count: 1, last_attempt_in_flight: true });
  });

  it('gives a number to one claimant only, however many race for it', async () => {
    const id = await newDelivery();
    const claims = await Promise.all(Array.from({ length: 6 }, () => claimAttempt(pool, id, 1, new Date())));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(false);
    expect((await attemptsOf(pool, id)).map((a) => a.attempt_number)).toEqual([1]);
  });

  it('takes numbers only in order: never one ahead, never one already taken', async () => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 2, new Date())).toBe(false);
    expect(await claimAttempt(pool, id, 0, new Date())).toBe(false);
    expect(await loadDelivery(pool, id)).toMatchObject({ attempt_count: 0, last_attempt_in_flight: false });
    expect(await attemptsOf(pool, id)).toEqual([]);

    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await recordAttempt(pool, outcome(id, 1, 'pending'))).toBe(true);
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(false);
    expect(await claimAttempt(pool, id, 3, new Date())).toBe(false);
    expect(await claimAttempt(pool, id, 2, new Date())).toBe(true);
  });

  it('claims no number while the one before it is in flight', async () => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await claimAttempt(pool, id, 2, new Date())).toBe(false);
    expect(await recordAttempt(pool, outcome(id, 1, 'pending'))).toBe(true);
    expect(await claimAttempt(pool, id, 2, new Date())).toBe(true);
    expect((await attemptsOf(pool, id)).map((a) => [a.attempt_number, a.in_flight])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it.each(['succeeded', 'failed'] as const)('claims nothing once the delivery has %s', async (state) => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await recordAttempt(pool, outcome(id, 1, state))).toBe(true);
    expect(await claimAttempt(pool, id, 2, new Date())).toBe(false);
    expect(await deliveryRowOf(pool, id)).toMatchObject({ state, attempt_count: 1 });
  });

  it('claims nothing for an unknown delivery', async () => {
    expect(await claimAttempt(pool, 'whd_unknown', 1, new Date())).toBe(false);
    expect(await loadDelivery(pool, 'whd_unknown')).toBeNull();
  });
});

describe('claiming and loading in one statement (the secret is known)', () => {
  it('claims the number and returns what the request is built from', async () => {
    const { deliveryId, publicId } = await seedDelivery(pool, accountId, {
      kind: 'face-detection',
      payload: '{"order": 7}',
      result: '{"face_coordinates": []}',
      url: 'https://receiver.example.test/hooks?x=1',
    });
    const claimed = await claimAndLoad(pool, { deliveryId, attempt: 1, accountId, ciphertext: 'v1.ciphertext-of-the-current-secret', startedAt: new Date() });
    expect(claimed).toEqual({
      id: deliveryId,
      url: 'https://receiver.example.test/hooks?x=1',
      trace_parent: null,
      task_status: 20,
      public_id: publicId,
      kind: 'face-detection',
      error_code: null,
      payload: '{"order": 7}',
      result: '{"face_coordinates": []}',
    });
    expect(await loadDelivery(pool, deliveryId)).toMatchObject({ attempt_count: 1, last_attempt_in_flight: true });
    // The number is taken, by either path.
    expect(await claimAndLoad(pool, { deliveryId, attempt: 1, accountId, ciphertext: 'v1.ciphertext-of-the-current-secret', startedAt: new Date() })).toBeNull();
    expect(await claimAttempt(pool, deliveryId, 1, new Date())).toBe(false);
  });

  it('claims nothing when the secret was rotated since the caller decrypted it, or for another account', async () => {
    const id = await newDelivery();
    const other = await seedAccount(pool, 'v1.ciphertext-of-the-current-secret');
    expect(await claimAndLoad(pool, { deliveryId: id, attempt: 1, accountId, ciphertext: 'v1.ciphertext-before-rotation', startedAt: new Date() })).toBeNull();
    expect(await claimAndLoad(pool, { deliveryId: id, attempt: 1, accountId: other, ciphertext: 'v1.ciphertext-of-the-current-secret', startedAt: new Date() })).toBeNull();
    expect(await attemptsOf(pool, id)).toEqual([]);
    expect(await loadDelivery(pool, id)).toMatchObject({ attempt_count: 0, last_attempt_in_flight: false });
  });

  it('follows the claim rules: not while the previous attempt is in flight, not out of order', async () => {
    const id = await newDelivery();
    const claim = (attempt: number) => claimAndLoad(pool, { deliveryId: id, attempt, accountId, ciphertext: 'v1.ciphertext-of-the-current-secret', startedAt: new Date() });
    expect(await claim(2)).toBeNull();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await claim(2)).toBeNull();
    expect(await recordAttempt(pool, outcome(id, 1, 'pending'))).toBe(true);
    expect(await claim(2)).toMatchObject({ id });
  });
});

describe('recording a claimed attempt', () => {
  it('stores the result and schedules the retry, measured from now', async () => {
    const id = await newDelivery();
    const startedAt = new Date();
    expect(await claimAttempt(pool, id, 1, startedAt)).toBe(true);
    expect(await recordAttempt(pool, outcome(id, 1, 'pending'))).toBe(true);

    expect(await attemptsOf(pool, id)).toEqual([
      { attempt_number: 1, started_at: startedAt, duration_ms: 42, status_code: 503, error: 'HTTP 503', response_excerpt: 'busy', in_flight: false },
    ]);
    const row = await deliveryRowOf(pool, id);
    expect(row).toMatchObject({ state: 'pending', attempt_count: 1, completed_at: null });
    // Due an hour after the recording, which happened before this read.
    expect(row.due_in_ms).toBeLessThanOrEqual(HOUR_MS);
    expect(row.due_in_ms).toBeGreaterThan(HOUR_MS - 10 * 60_000);
    expect(await loadDelivery(pool, id)).toMatchObject({ last_attempt_in_flight: false, last_attempt_claimed_ms_ago: null });
  });

  it.each(['succeeded', 'failed'] as const)('ends the delivery as %s: completed, nothing due', async (state) => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await recordAttempt(pool, outcome(id, 1, state))).toBe(true);
    const row = await deliveryRowOf(pool, id);
    expect(row).toMatchObject({ state, attempt_count: 1, next_attempt_at: null });
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it('records an attempt exactly once: a second recording (a rerun, a retry after a commit) changes nothing', async () => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    expect(await recordAttempt(pool, outcome(id, 1, 'pending'))).toBe(true);
    const first = { attempts: await attemptsOf(pool, id), delivery: await deliveryRowOf(pool, id) };

    expect(await recordAttempt(pool, outcome(id, 1, 'succeeded'))).toBe(false);
    expect(await attemptsOf(pool, id)).toEqual(first.attempts);
    expect(await deliveryRowOf(pool, id)).toMatchObject({ state: 'pending', next_attempt_at: first.delivery.next_attempt_at, completed_at: null });
  });

  it('records once when two recordings of the same attempt race', async () => {
    const id = await newDelivery();
    expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
    const done = await Promise.all([recordAttempt(pool, outcome(id, 1, 'succeeded')), recordAttempt(pool, outcome(id, 1, 'failed'))]);
    expect(done.filter(Boolean)).toHaveLength(1);
    const state = done[0] ? 'succeeded' : 'failed';
    expect(await deliveryRowOf(pool, id)).toMatchObject({ state });
    expect((await attemptsOf(pool, id)).map((a) => a.status_code)).toEqual([state === 'succeeded' ? 204 : 503]);
  });

  it('records nothing for a number that was never claimed', async () => {
    const id = await newDelivery();
    expect(await recordAttempt(pool, outcome(id, 1, 'succeeded'))).toBe(false);
    expect(await attemptsOf(pool, id)).toEqual([]);
    expect(await deliveryRowOf(pool, id)).toMatchObject({ state: 'pending', attempt_count: 0, completed_at: null });
  });
});
