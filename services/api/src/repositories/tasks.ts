// Tasks (`tasks`, `task_inputs`): raw SQL on the pg pool. These are the API's hot statements —
// reads that clients poll, lists, and creation through the `create_tasks` function.
import type pg from 'pg';
import { z } from 'zod';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import { IdempotencyRepository } from './idempotency';
import { execute, queryFirst, queryRows, statement, transaction, type SqlExecutor } from '@taskapi/db';

const TASK_COLUMNS = `id, public_id, kind, status, error_code, error_message, input::text AS input, payload::text AS payload,
  callback_url, cost, created_at, started_at, finished_at, result::text AS result, files::text AS files, files_expired_at, progress,
  priority, ttl_seconds, expires_at, fairness_key`;

const taskRow = z.object({
  /** Internal id (int8, so a string): ordering and foreign keys, never shown to customers. */
  id: z.string(),
  public_id: z.string(),
  kind: z.enum(TASK_KINDS),
  status: z.number(),
  error_code: z.string().nullable(),
  /** Null unless failed, and on tasks that failed before the column existed. */
  error_message: z.string().nullable(),
  /** JSON columns arrive as their source text, so the task JSON can echo them exactly. */
  input: z.string(),
  payload: z.string().nullable(),
  callback_url: z.string().nullable(),
  cost: z.number(),
  created_at: z.date(),
  started_at: z.date().nullable(),
  finished_at: z.date().nullable(),
  result: z.string().nullable(),
  /** `[{name, content_type, size}]` as JSON text. */
  files: z.string(),
  /** When the retention job deleted the task's files (`files` is then `[]`); null until then. */
  files_expired_at: z.date().nullable(),
  /**
   * Written once, by the terminal transition: 1 when completed, the last reported value (or null)
   * when failed or cancelled. Null while the task runs (its progress is in Redis then) and on
   * tasks that ended before the column existed.
   */
  progress: z.number().nullable(),
  /** Steering (docs/api.md): null when not given at creation. */
  priority: z.number().nullable(),
  ttl_seconds: z.number().nullable(),
  /** created_at + ttl_seconds. */
  expires_at: z.date().nullable(),
  fairness_key: z.string().nullable(),
});

/** A task as the repository reads it (`TASK_COLUMNS`). */
export type TaskRow = z.output<typeof taskRow>;

const TASK_BY_PUBLIC_ID = statement('task-by-public-id', `SELECT ${TASK_COLUMNS} FROM tasks WHERE public_id = $1 AND account_id = $2`, taskRow);
const TASK_BY_PUBLIC_ID_ANY_ACCOUNT = statement('task-by-public-id-any-account', `SELECT ${TASK_COLUMNS} FROM tasks WHERE public_id = $1`, taskRow);
const TASK_BY_ID = statement('task-by-id', `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1`, taskRow);
const TASKS_BY_IDS = statement('tasks-by-ids', `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ANY($1::int8[])`, taskRow);
const TASK_ID_BY_PUBLIC_ID = statement('task-cursor', 'SELECT id FROM tasks WHERE public_id = $1 AND account_id = $2', z.object({ id: z.string() }));

// The charge and the inserts happen in the `create_tasks` function (its source is
// prisma/functions/create_tasks.sql): one call charges one payer for a batch of creations.
// Rows come back in the order of the arrays.
const CREATE_TASKS = statement(
  'create-tasks',
  `
SELECT ordinal, task_id, created_at, available, grant_expired, spend_limit, spend_period, spent::text AS spent
  FROM create_tasks($1, $2, $3::text[], $4::text[], $5::task_kind[], $6::json[], $7::json[], $8::text[], $9::int[], $10::text[], $11::bytea[], $12::text[], $13,
                    $14::int[], $15::int[], $16::text[])`,
  z.object({
    ordinal: z.number(),
    /** Null when the payer could not pay (nothing was inserted for this creation). */
    task_id: z.string().nullable(),
    created_at: z.date().nullable(),
    /** The payer's credits after this creation (or before it, when refused). */
    available: z.number(),
    /** True when the trial grant expired before the charge. */
    grant_expired: z.boolean(),
    /** Set when the key's spend limit refused the creation: the limit, its period and what the key had spent in it. */
    spend_limit: z.number().nullable(),
    spend_period: z.enum(['day', 'month']).nullable(),
    /** int8, sent as text. */
    spent: z.string().transform(Number).nullable(),
  }),
);

// Uploads written before the file store held inputs keep their bytes in `task_inputs.data`
// (`npm run admin -- move-inputs-to-store` moves them, see domain/move-inputs-to-store.ts).
const INPUTS_IN_ROWS = statement(
  'task-inputs-in-rows',
  `
SELECT i.task_id::text AS task_id, t.public_id, i.content_type, i.data
  FROM task_inputs i JOIN tasks t ON t.id = i.task_id
 WHERE NOT i.in_store AND i.task_id > $1
 ORDER BY i.task_id
 LIMIT $2`,
  z.object({ task_id: z.string(), public_id: z.string(), content_type: z.string(), data: z.instanceof(Buffer) }),
);
export type InputInRow = z.output<typeof INPUTS_IN_ROWS.row>;

// Usage (GET /api/usage and the console's charts, domain/usage.ts): an index-only range scan of
// `tasks_usage_by_key_idx` over one account's [from, to) (migration 20261203000001), grouped at the
// grain the caller asks for: by UTC day or not, by key or not, always by kind and status. `date_bin`
// is plain arithmetic on the instant: UTC days whatever the session's time zone, and cheaper per row
// than `AT TIME ZONE`. The key's prefix is joined after grouping, from the account's own keys (by
// `account_id`, which keeps the join to them rather than to every account's keys).
export const USAGE = statement(
  'task-usage',
  `
SELECT u.day, u.kind, u.status, k.key_prefix, u.tasks, u.cost
  FROM (SELECT CASE WHEN $4 THEN date_bin('1 day', created_at, TIMESTAMPTZ '2000-01-01 00:00:00+00') END AS day,
               kind, status, CASE WHEN $5 THEN api_key_id END AS api_key_id,
               count(*)::int AS tasks, sum(cost)::int8::text AS cost
          FROM tasks
         WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
         GROUP BY 1, 2, 3, 4) u
  LEFT JOIN api_keys k ON k.account_id = $1 AND k.id = u.api_key_id`,
  z.object({
    /** Midnight UTC starting the day; null unless grouped by day. */
    day: z.date().nullable(),
    kind: z.enum(TASK_KINDS),
    status: z.number(),
    /** The key's prefix; null unless grouped by key. */
    key_prefix: z.string().nullable(),
    tasks: z.number(),
    /** Sum of `cost` (int8, sent as text). */
    cost: z.string().transform(Number),
  }),
  // Planned for each call's account and range: a prepared statement's generic plan expects a row or
  // two and sorts 100,000 on disk for a busy account (docs/api.md, "Usage").
  { prepared: false },
);

/** One account's tasks of one kind and current status (and UTC day, and key, when grouped so): how many, and their summed cost. */
export type UsageRow = z.output<typeof USAGE.row>;

/** What a usage query groups by besides kind and status. */
export interface UsageGrain {
  byDay: boolean;
  byKey: boolean;
}

/** The outcome of one creation in `create_tasks`. */
export type CreationOutcome = z.output<typeof CREATE_TASKS.row>;

/** Who pays for a batch of creations: the account's paid balance, or one trial grant (`grantId`). */
export interface Payer {
  accountId: string;
  grantId: string | null;
}

/** A task to insert and charge. */
export interface NewTask {
  publicId: string;
  apiKeyId: string;
  kind: TaskKind;
  /** `tasks.input` as JSON text. */
  inputText: string;
  /** `tasks.payload` as JSON text, or null. */
  payloadText: string | null;
  callbackUrl: string | null;
  cost: number;
  /**
   * An uploaded image, or null: its bytes go to `task_inputs.data`, or `data` is null when the API
   * already put them in the file store (`task_inputs.in_store`).
   */
  upload: { contentType: string; data: Buffer | null } | null;
  /** The creation request's `traceparent` (docs/architecture.md, "Tracing"), or null when tracing is off. */
  traceParent: string | null;
  /** Steering (docs/api.md): null when not given. */
  priority: number | null;
  ttlSeconds: number | null;
  fairnessKey: string | null;
}

export interface TaskListQuery {
  statuses?: number[];
  kind?: TaskKind;
  fairnessKey?: string;
  /** Only tasks older than this internal id (keyset pagination). */
  beforeId?: string;
  limit: number;
}

export class TaskRepository {
  constructor(private readonly pool: pg.Pool) {}

  /** The account's task, or null (unknown, or another account's: indistinguishable on purpose). */
  get(accountId: string, publicId: string): Promise<TaskRow | null> {
    return queryFirst(this.pool, TASK_BY_PUBLIC_ID, [publicId, accountId]);
  }

  /** The task whatever its account: only for requests that prove access otherwise (a signed file link). */
  getByPublicId(publicId: string): Promise<TaskRow | null> {
    return queryFirst(this.pool, TASK_BY_PUBLIC_ID_ANY_ACCOUNT, [publicId]);
  }

  getById(id: string): Promise<TaskRow | null> {
    return queryFirst(this.pool, TASK_BY_ID, [id]);
  }

  /** The internal id of the account's task, or null. */
  async idOf(accountId: string, publicId: string): Promise<string | null> {
    return (await queryFirst(this.pool, TASK_ID_BY_PUBLIC_ID, [publicId, accountId]))?.id ?? null;
  }

  /** The account's tasks, newest first (by internal id), filtered. */
  list(accountId: string, q: TaskListQuery): Promise<TaskRow[]> {
    const values: unknown[] = [accountId];
    const where = ['account_id = $1'];
    // One prepared statement per combination of filters.
    let name = 'list-tasks';
    if (q.beforeId !== undefined) {
      values.push(q.beforeId);
      where.push(`id < $${values.length}`);
      name += '-after';
    }
    if (q.statuses?.length) {
      values.push(q.statuses);
      where.push(`status = ANY($${values.length}::smallint[])`);
      name += '-status';
    }
    if (q.kind) {
      values.push(q.kind);
      where.push(`kind = $${values.length}::task_kind`);
      name += '-kind';
    }
    if (q.fairnessKey !== undefined) {
      values.push(q.fairnessKey);
      where.push(`fairness_key = $${values.length}`);
      name += '-key';
    }
    values.push(q.limit);
    const text = `SELECT ${TASK_COLUMNS} FROM tasks WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${values.length}`;
    return queryRows(this.pool, statement(name, text, taskRow), values);
  }

  /** The account's tasks created in [`from`, `until`), counted per kind and status, and per UTC day and per key as `grain` says. */
  usage(accountId: string, from: Date, until: Date, grain: UsageGrain): Promise<UsageRow[]> {
    return queryRows(this.pool, USAGE, [accountId, from, until, grain.byDay, grain.byKey]);
  }

  /** Up to `limit` uploads still held in their row, after the task id `afterTaskId`, in id order. */
  inputsInRows(afterTaskId: string, limit: number): Promise<InputInRow[]> {
    return queryRows(this.pool, INPUTS_IN_ROWS, [afterTaskId, limit]);
  }

  /**
   * Records that the task's upload is in the file store and clears its bytes; false when it was
   * already (only a row still holding its bytes is switched, so running twice, or twice at once, is safe).
   */
  async markInputStored(taskId: string): Promise<boolean> {
    return (await execute(this.pool, 'task-input-stored', 'UPDATE task_inputs SET in_store = true, data = NULL WHERE task_id = $1 AND NOT in_store', [taskId])) > 0;
  }

  /**
   * Charges `payer` for `tasks` and inserts those it can pay for, in order, in one statement (one
   * balance-row lock and one commit for the batch). One outcome per task, in the same order.
   */
  create(payer: Payer, tasks: NewTask[]): Promise<CreationOutcome[]> {
    return createTasks(this.pool, payer, tasks, false);
  }

  /**
   * Charges `payer` for every task of a batch request and inserts them all, or nothing (credits,
   * spend limit, expired grant: every outcome then has no `task_id`). With `key`, the batch's
   * `Idempotency-Key` record is written in the same transaction; when a live record exists (a
   * concurrent twin holds it), nothing is kept and every outcome has no `task_id`.
   */
  createAll(payer: Payer, tasks: NewTask[], key?: { key: string; fingerprint: string }): Promise<CreationOutcome[]> {
    if (!key) return createTasks(this.pool, payer, tasks, true);
    return transaction(this.pool, async (client) => {
      const outcomes = await createTasks(client, payer, tasks, true);
      const ids = outcomes.map((o) => o.task_id);
      if (ids.some((id) => id === null)) return { commit: false, value: outcomes };
      const claimed = await new IdempotencyRepository(client).claim(payer.accountId, key.key, key.fingerprint, ids[0] as string, ids as string[]);
      return claimed ? { commit: true, value: outcomes } : { commit: false, value: outcomes.map((o) => ({ ...o, task_id: null, created_at: null })) };
    });
  }

  /** The tasks with these internal ids, in that order (those that exist). */
  async getManyById(ids: readonly string[]): Promise<TaskRow[]> {
    const rows = await queryRows(this.pool, TASKS_BY_IDS, [ids]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  /**
   * `create` for one task together with its `Idempotency-Key` record, in one transaction. When a
   * live record of the key exists (a concurrent twin holds it), or the payer cannot pay, nothing is
   * kept: the outcome then has no `task_id`. Blocks while a concurrent transaction holds the key.
   */
  createWithIdempotencyKey(payer: Payer, task: NewTask, key: { key: string; fingerprint: string }): Promise<CreationOutcome> {
    return transaction(this.pool, async (client) => {
      const [outcome] = (await createTasks(client, payer, [task], false)) as [CreationOutcome];
      const claimed = outcome.task_id !== null && (await new IdempotencyRepository(client).claim(payer.accountId, key.key, key.fingerprint, outcome.task_id));
      return claimed ? { commit: true, value: outcome } : { commit: false, value: { ...outcome, task_id: null, created_at: null } };
    });
  }
}

function createTasks(db: SqlExecutor, payer: Payer, tasks: NewTask[], allOrNothing: boolean): Promise<CreationOutcome[]> {
  return queryRows(db, CREATE_TASKS, [
    payer.accountId,
    payer.grantId,
    tasks.map((t) => t.publicId),
    tasks.map((t) => t.apiKeyId),
    tasks.map((t) => t.kind),
    tasks.map((t) => t.inputText),
    tasks.map((t) => t.payloadText),
    tasks.map((t) => t.callbackUrl),
    tasks.map((t) => t.cost),
    tasks.map((t) => t.upload?.contentType ?? null),
    tasks.map((t) => t.upload?.data ?? null),
    tasks.map((t) => t.traceParent),
    allOrNothing,
    tasks.map((t) => t.priority),
    tasks.map((t) => t.ttlSeconds),
    tasks.map((t) => t.fairnessKey),
  ]);
}
