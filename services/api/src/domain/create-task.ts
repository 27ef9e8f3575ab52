import type pg from 'pg';
import { newId } from '@taskapi/ids';
import { TaskStatus } from '@taskapi/domain';
import { sha256Hex } from '@taskapi/crypto';
import { HttpError, conflict } from '../http/errors';
import type { KeyPrincipal } from '../http/request-context';
import type { TaskDraft } from './task-input';
import type { TaskRow } from './task-view';
import { getTaskById } from './task-queries';
import { TRIAL_KEY_EXPIRED } from '../http/api-key-auth';

export const INSUFFICIENT_CREDITS = 'Insufficient credits.';
export const IDEMPOTENCY_KEY_REUSED = 'This Idempotency-Key was already used with a different request.';

// Charge and create in one statement (one implicit transaction, one round trip). The conditional
// UPDATE is the whole concurrency story: PostgreSQL row-locks the balance (or grant) row, and
// re-checks `>= cost` after any concurrent charge commits, so balances can never go negative.
// Exactly one of the two charges applies: paid balance when $4 (grant) is null, else the grant.
const CREATE_TASK_SQL = `
WITH paid AS (
  UPDATE accounts SET paid_balance = paid_balance - $9
   WHERE $4::text IS NULL AND id = $2 AND paid_balance >= $9
  RETURNING id
), trial AS (
  UPDATE trial_grants SET quota_remaining = quota_remaining - $9
   WHERE $4::text IS NOT NULL AND id = $4 AND account_id = $2 AND expires_at > now() AND quota_remaining >= $9
  RETURNING id
), t AS (
  INSERT INTO tasks (public_id, account_id, api_key_id, grant_id, kind, input, payload, callback_url, cost)
  SELECT $1, $2, $3, $4, $5::task_kind, $6::json, $7::json, $8, $9
    FROM (SELECT id FROM paid UNION ALL SELECT id FROM trial) charged
  RETURNING id, created_at
), ledger AS (
  INSERT INTO credit_ledger (account_id, grant_id, task_id, entry_type, amount)
  SELECT $2, $4, id, 'charge', -$9::int FROM t
), upload AS (
  INSERT INTO task_inputs (task_id, content_type, data)
  SELECT id, $10, $11 FROM t WHERE $11::bytea IS NOT NULL
)
SELECT id, created_at FROM t`;

// Inserts the key, or takes over a record older than 24 h; returns nothing when a live record exists.
const CLAIM_IDEMPOTENCY_KEY_SQL = `
INSERT INTO idempotency_keys (account_id, key, fingerprint, task_id) VALUES ($1, $2, $3, $4)
ON CONFLICT (account_id, key) DO UPDATE
   SET fingerprint = EXCLUDED.fingerprint, task_id = EXCLUDED.task_id, created_at = now()
 WHERE idempotency_keys.created_at <= now() - interval '24 hours'
RETURNING task_id`;

const FIND_IDEMPOTENCY_KEY_SQL = `
SELECT fingerprint, task_id FROM idempotency_keys
 WHERE account_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'`;

export interface IdempotencyRequest {
  key: string;
  /** Hash of what makes two requests "the same" (kind and body). */
  fingerprint: string;
}

export interface CreateTaskResult {
  row: TaskRow;
  /** True when an earlier request with the same Idempotency-Key created this task. */
  replayed: boolean;
}

/** Canonical fingerprint of a creation request: key order and whitespace do not matter. */
export function requestFingerprint(kind: string, body: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return sha256Hex(`${kind}\n${JSON.stringify(canonical(body))}`);
}

export interface CreateTaskDeps {
  pool: pg.Pool;
  /** Prefixes for the expired-trial 401, when a grant expires between authentication and charge. */
  activeTrialPrefixes(accountId: string, exceptKeyId: string): Promise<string[]>;
}

/**
 * Charges the caller and records the task, atomically. Throws 402 when credits are short.
 * With an idempotency key, the same key and body within 24 h returns the first task (charged once)
 * and a different body is a 409.
 */
export async function createTask(
  deps: CreateTaskDeps,
  principal: KeyPrincipal,
  draft: TaskDraft,
  cost: number,
  idempotency?: IdempotencyRequest,
): Promise<CreateTaskResult> {
  if (idempotency) {
    const earlier = await findIdempotent(deps.pool, principal.accountId, idempotency);
    if (earlier) return earlier;
  }
  const publicId = newId('task');
  const inputText = JSON.stringify(draft.input);
  const values = [
    publicId,
    principal.accountId,
    principal.keyId,
    principal.type === 'trial' ? principal.grantId : null,
    draft.kind,
    inputText,
    draft.payloadText,
    draft.callbackUrl,
    cost,
    draft.upload?.contentType ?? null,
    draft.upload?.data ?? null,
  ];

  let created: { id: string; created_at: Date } | undefined;
  if (!idempotency) {
    const { rows } = await deps.pool.query<{ id: string; created_at: Date }>({ name: 'create-task', text: CREATE_TASK_SQL, values });
    created = rows[0];
  } else {
    const client = await deps.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; created_at: Date }>({ name: 'create-task', text: CREATE_TASK_SQL, values });
      created = rows[0];
      if (created) {
        // Blocks while a concurrent request holds the same key, then sees its committed record.
        const claim = await client.query({
          name: 'claim-idempotency-key',
          text: CLAIM_IDEMPOTENCY_KEY_SQL,
          values: [principal.accountId, idempotency.key, idempotency.fingerprint, created.id],
        });
        if (claim.rowCount === 0) created = undefined;
      }
      await client.query(created ? 'COMMIT' : 'ROLLBACK');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    if (!created) {
      // Either a concurrent twin won the key, or credits ran out (possibly spent by that twin).
      const earlier = await findIdempotent(deps.pool, principal.accountId, idempotency);
      if (earlier) return earlier;
    }
  }

  if (!created) throw await insufficientCredits(deps, principal, cost);
  return {
    replayed: false,
    row: {
      id: created.id,
      public_id: publicId,
      kind: draft.kind,
      status: TaskStatus.queued,
      error_code: null,
      input: inputText,
      payload: draft.payloadText,
      callback_url: draft.callbackUrl,
      cost,
      created_at: created.created_at,
      started_at: null,
      finished_at: null,
      result: null,
      files: '[]',
    },
  };
}

async function findIdempotent(pool: pg.Pool, accountId: string, req: IdempotencyRequest): Promise<CreateTaskResult | null> {
  const { rows } = await pool.query<{ fingerprint: string; task_id: string }>({
    name: 'find-idempotency-key',
    text: FIND_IDEMPOTENCY_KEY_SQL,
    values: [accountId, req.key],
  });
  const found = rows[0];
  if (!found) return null;
  if (found.fingerprint !== req.fingerprint) throw conflict(IDEMPOTENCY_KEY_REUSED);
  const task = await getTaskById(pool, found.task_id);
  if (!task) return null;
  // The replay is the first response again: the task as it was created.
  return {
    replayed: true,
    row: { ...task, status: TaskStatus.queued, error_code: null, started_at: null, finished_at: null, result: null, files: '[]' },
  };
}

async function insufficientCredits(deps: CreateTaskDeps, principal: KeyPrincipal, cost: number): Promise<HttpError> {
  let available: number;
  if (principal.type === 'trial' && principal.grantId) {
    const { rows } = await deps.pool.query<{ quota_remaining: number; expired: boolean }>({
      name: 'grant-availability',
      text: 'SELECT quota_remaining, expires_at <= now() AS expired FROM trial_grants WHERE id = $1',
      values: [principal.grantId],
    });
    if (rows[0]?.expired) {
      const prefixes = await deps.activeTrialPrefixes(principal.accountId, principal.keyId);
      return new HttpError(401, TRIAL_KEY_EXPIRED, { active_key_prefixes: prefixes });
    }
    available = rows[0]?.quota_remaining ?? 0;
  } else {
    const { rows } = await deps.pool.query<{ paid_balance: number }>({
      name: 'paid-balance',
      text: 'SELECT paid_balance FROM accounts WHERE id = $1',
      values: [principal.accountId],
    });
    available = rows[0]?.paid_balance ?? 0;
  }
  return new HttpError(402, INSUFFICIENT_CREDITS, { required: cost, available });
}
