// Rows the dispatcher works on, written with SQL into a test file's own database: an account (with
// its encrypted webhook secret), a finished task and its pending delivery, as the lifecycle's terminal transition leaves them.
import type pg from 'pg';
import { z } from 'zod';

let seq = 0;

/** A fresh id with `prefix`, unique in this test file's database. */
export function uniqueId(prefix: string): string {
  seq++;
  return `${prefix}_${process.pid}_${seq}`;
}

/** Inserts an account whose webhook secret is `ciphertext`, with one API key; returns its id. */
export async function seedAccount(pool: pg.Pool, ciphertext = 'x'): Promise<string> {
  const accountId = uniqueId('acct');
  await pool.query(`INSERT INTO accounts (id, email, password_hash, webhook_secret_ciphertext) VALUES ($1, $1 || '@example.test', 'x', $2)`, [accountId, ciphertext]);
  await pool.query(
    `INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix)
     VALUES ('key_' || $1, $1, 'paid', encode(sha256(convert_to($1, 'UTF8')), 'hex'), 'x', 'sk-live-xxxxxxxx')`,
    [accountId],
  );
  return accountId;
}

export interface TaskOutcome {
  kind?: 'image-generation' | 'face-detection' | 'video-generation';
  /** 20 completed or 30 failed (the statuses a delivery announces). */
  status?: 20 | 30;
  errorCode?: string | null;
  /** JSON source text, stored as it is (`json` keeps it exactly). */
  payload?: string | null;
  result?: string | null;
  url?: string;
}

/** Inserts a finished task of `accountId` and its pending delivery, due now, no attempt yet. */
export async function seedDelivery(pool: pg.Pool, accountId: string, t: TaskOutcome = {}): Promise<{ deliveryId: string; publicId: string }> {
  const publicId = uniqueId('task');
  const deliveryId = uniqueId('whd');
  const status = t.status ?? 20;
  await pool.query(
    `WITH t AS (
       INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, error_code, input, payload, result, callback_url, cost, started_at, finished_at)
       VALUES ($1, $2, 'key_' || $2, $3::task_kind, $4::smallint, $5, '{}', $6::json, $7::json, $8, 1, now(), now())
       RETURNING id, account_id, callback_url, status
     )
     INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, next_attempt_at)
     SELECT $9, id, account_id, callback_url, status, now() FROM t`,
    [publicId, accountId, t.kind ?? 'image-generation', status, t.errorCode ?? null, t.payload ?? null, t.result ?? null, t.url ?? 'https://example.test/hook', deliveryId],
  );
  return { deliveryId, publicId };
}

const deliveryRow = z.object({
  state: z.enum(['pending', 'succeeded', 'failed']),
  attempt_count: z.number(),
  next_attempt_at: z.date().nullable(),
  completed_at: z.date().nullable(),
  /** Milliseconds from the reading transaction's `now()` to `next_attempt_at`. */
  due_in_ms: z.number().nullable(),
});

/** The delivery's row as a console reader would see it. */
export async function deliveryRowOf(pool: pg.Pool, deliveryId: string): Promise<z.output<typeof deliveryRow>> {
  const { rows } = await pool.query(
    `SELECT state::text AS state, attempt_count, next_attempt_at, completed_at,
            (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS due_in_ms
       FROM webhook_deliveries WHERE id = $1`,
    [deliveryId],
  );
  return deliveryRow.parse(rows[0]);
}

const attemptRow = z.object({
  attempt_number: z.number(),
  started_at: z.date(),
  duration_ms: z.number(),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
  in_flight: z.boolean(),
});

/** The delivery's attempt rows, in order. */
export async function attemptsOf(pool: pg.Pool, deliveryId: string): Promise<Array<z.output<typeof attemptRow>>> {
  const { rows } = await pool.query(
    `SELECT attempt_number, started_at, duration_ms, status_code, error, response_excerpt, in_flight
       FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt_number`,
    [deliveryId],
  );
  return z.array(attemptRow).parse(rows);
}
