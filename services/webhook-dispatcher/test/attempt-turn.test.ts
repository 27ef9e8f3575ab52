// Whose turn it is: what a run of attempt N's job does with its delivery as loaded from PostgreSQL
// (the in-flight rules). Deliveries are brought into each state through the dispatcher's own
// claim and record functions; a claim "of a run that died" is one started long ago (its age is
// measured by the database's clock, so nothing waits). In a database of this file's own.
import pg from 'pg';
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { attemptTurn } from '../src/domain/attempt-turn';
import { claimAttempt, loadDelivery, recordAttempt } from '../src/repositories/deliveries';
import { seedAccount, seedDelivery } from './support/deliveries';

const DATABASE_URL = testDatabaseUrl('dispatcher_turns');
/** How long a claim may stay unrecorded while its run may still be alive. */
const LIVE_CLAIM_MS = 60_000;
const LONG_AGO = () => new Date(Date.now() - 10 * LIVE_CLAIM_MS);

let pool: pg.Pool;
let accountId: string;

beforeAll(async () => {
  await recreateDatabase(DATABASE_URL);
  pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  accountId = await seedAccount(pool);
}, 60_000);

afterAll(async () => {
  await pool?.end();
});

const newDelivery = async () => (await seedDelivery(pool, accountId)).deliveryId;

/** The turn of attempt `attempt`'s job, for the delivery as it is now. */
async function turnOf(deliveryId: string, attempt: number, canWait = true) {
  return attemptTurn(await loadDelivery(pool, deliveryId), attempt, { liveClaimMs: LIVE_CLAIM_MS, canWait });
}

async function recordFailed(deliveryId: string, attempt: number): Promise<void> {
  const recorded = await recordAttempt(pool, {
    deliveryId,
    attempt,
    durationMs: 1,
    statusCode: 500,
    error: 'HTTP 500',
    responseExcerpt: null,
    state: 'pending',
    retryInMs: 0,
  });
  expect(recorded).toBe(true);
}

it('a fresh delivery: attempt 1 is sent; no later number is', async () => {
  const id = await newDelivery();
  expect(await turnOf(id, 1)).toEqual({ action: 'send' });
  expect(await turnOf(id, 2)).toEqual({ action: 'skip' });
});

it('after a recorded attempt: the next number is sent, the recorded one never again', async () => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
  await recordFailed(id, 1);
  expect(await turnOf(id, 1)).toEqual({ action: 'skip' });
  expect(await turnOf(id, 2)).toEqual({ action: 'send' });
  expect(await turnOf(id, 3)).toEqual({ action: 'skip' });
});

it('while an attempt is in flight, the next number waits its turn', async () => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
  expect(await turnOf(id, 2)).toEqual({ action: 'skip' });
  expect(await claimAttempt(pool, id, 2, new Date())).toBe(false);
});

it('a second run of an attempt whose claim is recent looks again once the first run would have finished', async () => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
  const turn = await turnOf(id, 1);
  expect(turn.action).toBe('wait');
  // The first run's deadline: the claim's time plus LIVE_CLAIM_MS, so a moment less than that from now.
  const inMs = turn.action === 'wait' ? turn.inMs : NaN;
  expect(inMs).toBeLessThanOrEqual(LIVE_CLAIM_MS);
  expect(inMs).toBeGreaterThan(LIVE_CLAIM_MS / 2);
});

it('a claim whose run cannot have lived this long is recorded with an unknown result, never sent again', async () => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, LONG_AGO())).toBe(true);
  expect(await turnOf(id, 1)).toEqual({ action: 'record-unknown' });
  expect(await turnOf(id, 2)).toEqual({ action: 'skip' });
});

it('a run that cannot postpone its job records a recent claim as unknown instead of waiting', async () => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
  expect(await turnOf(id, 1, false)).toEqual({ action: 'record-unknown' });
});

it.each(['succeeded', 'failed'] as const)('a delivery that has %s: every run skips', async (state) => {
  const id = await newDelivery();
  expect(await claimAttempt(pool, id, 1, new Date())).toBe(true);
  expect(await recordAttempt(pool, { deliveryId: id, attempt: 1, durationMs: 1, statusCode: null, error: null, responseExcerpt: null, state, retryInMs: null })).toBe(true);
  for (const attempt of [1, 2]) expect(await turnOf(id, attempt)).toEqual({ action: 'skip' });
});

it('an unknown delivery: skipped', async () => {
  expect(await turnOf('whd_unknown', 1)).toEqual({ action: 'skip' });
});
