import type pg from 'pg';
import { newId } from '@taskapi/ids';
import { TaskStatus } from '@taskapi/domain';
import { sha256Hex } from '@taskapi/crypto';
import { ApiError } from '../errors';
import type { KeyPrincipal } from './principal';
import { Batcher } from '../infra/batcher';
import type { TaskDraft } from './task-input';
import type { TaskRow } from './task-view';
import { getTaskById } from './task-queries';

// The charge and the inserts happen in the `create_tasks` function (migration
// 20261122000000_create_tasks_function): one call charges one payer for a batch of creations.
const CREATE_TASKS_SQL = `
SELECT ordinal, task_id, created_at, available, grant_expired
  FROM create_tasks($1, $2, $3::text[], $4::text[], $5::task_kind[], $6::json[], $7::json[], $8::text[], $9::int[], $10::text[], $11::bytea[])`;

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

/** Batches stop growing at this many bytes of uploaded images. */
const MAX_BATCH_UPLOAD_BYTES = 16 * 1024 * 1024;

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

interface Creation {
  principal: KeyPrincipal;
  draft: TaskDraft;
  cost: number;
  publicId: string;
  inputText: string;
}

interface Decision {
  taskId: string | null;
  createdAt: Date | null;
  available: number;
  grantExpired: boolean;
}

/** A creation the database refused, with the original error (kept as thrown: codes matter). */
interface Failure {
  failure: unknown;
}

interface Queryable {
  query: pg.Pool['query'];
}

/** Who pays: an account's paid balance, or one trial grant. Creations for one payer are batched. */
function payerOf(p: KeyPrincipal): string {
  return p.type === 'trial' && p.grantId ? `grant:${p.grantId}` : `paid:${p.accountId}`;
}

async function decide(db: Queryable, batch: Creation[]): Promise<Decision[]> {
  const first = batch[0] as Creation;
  const grantId = first.principal.type === 'trial' ? first.principal.grantId : null;
  const { rows } = await db.query<{ ordinal: number; task_id: string | null; created_at: Date | null; available: number; grant_expired: boolean }>({
    name: 'create-tasks',
    text: CREATE_TASKS_SQL,
    values: [
      first.principal.accountId,
      grantId,
      batch.map((c) => c.publicId),
      batch.map((c) => c.principal.keyId),
      batch.map((c) => c.draft.kind),
      batch.map((c) => c.inputText),
      batch.map((c) => c.draft.payloadText),
      batch.map((c) => c.draft.callbackUrl),
      batch.map((c) => c.cost),
      batch.map((c) => c.draft.upload?.contentType ?? null),
      batch.map((c) => c.draft.upload?.data ?? null),
    ],
  });
  return rows.map((r) => ({ taskId: r.task_id, createdAt: r.created_at, available: r.available, grantExpired: r.grant_expired }));
}

/**
 * Charges the caller and records tasks. Concurrent creations for the same payer are decided
 * together in one database call (see `create_tasks`), in arrival order: never an overdraft, and
 * one balance-row lock and one commit per batch instead of per task.
 */
export class TaskCreator {
  private readonly batcher: Batcher<string, Creation, Decision | Failure>;

  constructor(
    private readonly pool: pg.Pool,
    /** Prefixes for the expired-trial 401, when a grant expires between authentication and charge. */
    private readonly activeTrialPrefixes: (accountId: string, exceptKeyId: string) => Promise<string[]>,
  ) {
    this.batcher = new Batcher((_payer, batch) => this.flush(batch), {
      maxItems: 100,
      weight: (c) => c.draft.upload?.data.length ?? 0,
      maxWeight: MAX_BATCH_UPLOAD_BYTES,
    });
  }

  /**
   * Throws 402 when credits are short. With an idempotency key, the same key and body within 24 h
   * returns the first task (charged once) and a different body is a 409.
   */
  async create(principal: KeyPrincipal, draft: TaskDraft, cost: number, idempotency?: IdempotencyRequest): Promise<CreateTaskResult> {
    const creation: Creation = { principal, draft, cost, publicId: newId('task'), inputText: JSON.stringify(draft.input) };
    let decision: Decision;
    if (!idempotency) {
      const outcome = await this.batcher.submit(payerOf(principal), creation);
      if ('failure' in outcome) throw outcome.failure;
      decision = outcome;
    } else {
      const earlier = await this.findIdempotent(principal.accountId, idempotency);
      if (earlier) return earlier;
      decision = await this.createIdempotently(creation, idempotency);
      if (!decision.taskId) {
        // Either a concurrent twin won the key, or credits ran out (possibly spent by that twin).
        const twin = await this.findIdempotent(principal.accountId, idempotency);
        if (twin) return twin;
      }
    }
    if (!decision.taskId || !decision.createdAt) throw await this.refusal(creation, decision);
    return {
      replayed: false,
      row: {
        id: decision.taskId,
        public_id: creation.publicId,
        kind: draft.kind,
        status: TaskStatus.queued,
        error_code: null,
        input: creation.inputText,
        payload: draft.payloadText,
        callback_url: draft.callbackUrl,
        cost,
        created_at: decision.createdAt,
        started_at: null,
        finished_at: null,
        result: null,
        files: '[]',
      },
    };
  }

  /** One call for the batch; if it fails, each creation alone, so one bad request fails only itself. */
  private async flush(batch: Creation[]): Promise<Array<Decision | Failure>> {
    try {
      return await decide(this.pool, batch);
    } catch (err) {
      if (batch.length === 1) return [{ failure: err }];
      const single = await Promise.allSettled(batch.map((c) => decide(this.pool, [c])));
      return single.map((s) => (s.status === 'fulfilled' ? (s.value[0] as Decision) : { failure: s.reason }));
    }
  }

  private async createIdempotently(creation: Creation, idempotency: IdempotencyRequest): Promise<Decision> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const [decision] = (await decide(client, [creation])) as [Decision];
      let committed = false;
      if (decision.taskId) {
        // Blocks while a concurrent request holds the same key, then sees its committed record.
        const claim = await client.query({
          name: 'claim-idempotency-key',
          text: CLAIM_IDEMPOTENCY_KEY_SQL,
          values: [creation.principal.accountId, idempotency.key, idempotency.fingerprint, decision.taskId],
        });
        committed = claim.rowCount === 1;
      }
      await client.query(committed ? 'COMMIT' : 'ROLLBACK');
      return committed ? decision : { ...decision, taskId: null, createdAt: null };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async findIdempotent(accountId: string, req: IdempotencyRequest): Promise<CreateTaskResult | null> {
    const { rows } = await this.pool.query<{ fingerprint: string; task_id: string }>({
      name: 'find-idempotency-key',
      text: FIND_IDEMPOTENCY_KEY_SQL,
      values: [accountId, req.key],
    });
    const found = rows[0];
    if (!found) return null;
    if (found.fingerprint !== req.fingerprint) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    const task = await getTaskById(this.pool, found.task_id);
    if (!task) return null;
    // The replay is the first response again: the task as it was created.
    return {
      replayed: true,
      row: { ...task, status: TaskStatus.queued, error_code: null, started_at: null, finished_at: null, result: null, files: '[]' },
    };
  }

  private async refusal(creation: Creation, decision: Decision): Promise<ApiError> {
    const { principal, cost } = creation;
    if (decision.grantExpired) {
      const prefixes = await this.activeTrialPrefixes(principal.accountId, principal.keyId);
      return new ApiError('TRIAL_KEY_EXPIRED', { fields: { active_key_prefixes: prefixes } });
    }
    return new ApiError('INSUFFICIENT_CREDITS', { fields: { required: cost, available: decision.available } });
  }
}
