// The floor of this design: the least a task must cost, run as the three services run (one API
// process, W worker processes, D dispatcher processes) beside the real ones in the same bench run
// (section 5). Per task it does only what the design cannot do without:
//   - API: one HTTP request parsed, one statement (the balance debited, the task row and its
//     ledger charge inserted), one BullMQ job added, a JSON answer;
//   - worker: one BullMQ job taken, the claim statement, the built-in 64×64 image engine and its
//     file written to disk, the finish statement (the task row and its delivery row), one BullMQ
//     job added for the webhook;
//   - dispatcher: one BullMQ job taken, the claim statement (the delivery, its attempt row and the
//     task's body fields), the body built and signed as the dispatcher signs it, one HTTPS POST
//     through a keep-alive undici Agent, the outcome statement.
// Same tables and the same five statements per task as the platform (named, so prepared once per
// connection, as the platform's are); no authentication, rate limit, scheduler, markers, events,
// logs, metrics or tracing: those are what the platform adds, and what the floor measures.
// Usage: tsx bench/floor-pipeline.ts api|worker|dispatcher (environment: DATABASE_URL, REDIS_URL,
// FLOOR_ACCOUNT_ID, FLOOR_KEY_ID, FLOOR_WEBHOOK_SECRET, FLOOR_FILES_DIR, FLOOR_CONCURRENCY, PORT).
// Prints `floor <role> ready <port>` when it takes work; stops on SIGTERM.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Agent, request } from 'undici';
import { webhookBody, webhookHeaders } from '@taskapi/domain';
import { createImageGenerationEngine } from '@taskapi/engines';
import { TASK_QUEUES, WEBHOOK_QUEUE } from '@taskapi/queue';

export const FLOOR_TASK_QUEUE = '{floor-tasks}';
export const FLOOR_WEBHOOK_QUEUE = '{floor-webhooks}';
const COST = 1;

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const CREATE = {
  name: 'floor-create',
  text: `WITH a AS (UPDATE accounts SET paid_balance = paid_balance - $5 WHERE id = $1 AND paid_balance >= $5 RETURNING id),
              t AS (INSERT INTO tasks (public_id, account_id, api_key_id, kind, input, callback_url, cost)
                    SELECT $3, a.id, $2, 'image-generation', $4::json, $6, $5 FROM a RETURNING id, account_id),
              l AS (INSERT INTO credit_ledger (account_id, task_id, entry_type, amount) SELECT account_id, id, 'charge', -$5 FROM t)
         SELECT id::text AS id FROM t`,
};
const START = {
  name: 'floor-start',
  text: `UPDATE tasks SET status = 10, started_at = now(), attempts = attempts + 1 WHERE public_id = $1 AND status = 0 RETURNING input::text AS input`,
};
const FINISH = {
  name: 'floor-finish',
  text: `WITH t AS (UPDATE tasks SET status = 20, result = $2::json, files = $3::jsonb, finished_at = now()
                 WHERE public_id = $1 AND status = 10 RETURNING id, account_id, callback_url)
         INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, next_attempt_at)
         SELECT $4, id, account_id, callback_url, 20, now() FROM t WHERE callback_url IS NOT NULL RETURNING id`,
};
const CLAIM = {
  name: 'floor-claim',
  text: `WITH d AS (UPDATE webhook_deliveries SET attempt_count = 1 WHERE id = $1 AND attempt_count = 0 AND state = 'pending' RETURNING id, url, task_status, task_id),
              w AS (INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, in_flight) SELECT id, 1, now(), 0, true FROM d RETURNING delivery_id)
         SELECT d.id, d.url, d.task_status, t.public_id, t.kind::text AS kind, t.error_code, t.payload::text AS payload, t.result::text AS result
           FROM d JOIN w ON w.delivery_id = d.id JOIN tasks t ON t.id = d.task_id`,
};
const RECORD = {
  name: 'floor-record',
  text: `WITH a AS (UPDATE webhook_attempts SET in_flight = false, duration_ms = $2, status_code = $3 WHERE delivery_id = $1 AND attempt_number = 1 AND in_flight RETURNING delivery_id)
         UPDATE webhook_deliveries d SET state = 'succeeded', completed_at = now() FROM a WHERE d.id = a.delivery_id`,
};

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

async function api(pool: pg.Pool, redis: Redis): Promise<() => Promise<void>> {
  const accountId = env('FLOOR_ACCOUNT_ID');
  const keyId = env('FLOOR_KEY_ID');
  const queue = new Queue(FLOOR_TASK_QUEUE, { connection: redis, defaultJobOptions: TASK_QUEUES['image-generation'].defaultJobOptions });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { prompt: string; width: number; height: number; callback_url: string };
        const publicId = newId('tsk');
        const input = JSON.stringify({ prompt: body.prompt, width: body.width, height: body.height });
        const { rows } = await pool.query({ ...CREATE, values: [accountId, keyId, publicId, input, COST, body.callback_url] });
        if (rows.length === 0) throw new Error('floor: no balance');
        await queue.add('run', { public_id: publicId }, { jobId: publicId });
        const answer = JSON.stringify({ public_id: publicId, status: 0 });
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }).end(answer);
      })().catch((err: unknown) => res.writeHead(500).end(String(err)));
    });
  });
  await new Promise<void>((resolve) => server.listen(Number(env('PORT')), '127.0.0.1', resolve));
  return async () => {
    await new Promise((resolve) => server.close(resolve));
    await queue.close();
  };
}

async function worker(pool: pg.Pool, redis: Redis): Promise<() => Promise<void>> {
  const engine = createImageGenerationEngine();
  const filesDir = env('FLOOR_FILES_DIR');
  const webhooks = new Queue(FLOOR_WEBHOOK_QUEUE, { connection: redis, defaultJobOptions: WEBHOOK_QUEUE.defaultJobOptions });
  const w = new Worker<{ public_id: string }>(
    FLOOR_TASK_QUEUE,
    async (job) => {
      const publicId = job.data.public_id;
      const { rows } = await pool.query<{ input: string }>({ ...START, values: [publicId] });
      if (rows.length === 0) return;
      const out = await engine.run({ kind: 'image-generation', publicId, params: JSON.parse(rows[0]!.input) as Record<string, unknown> }, new AbortController().signal);
      const files = out.files ?? [];
      await fs.mkdir(path.join(filesDir, publicId), { recursive: true });
      await Promise.all(files.map((f) => fs.writeFile(path.join(filesDir, publicId, f.name), f.data)));
      const listed = files.map((f) => ({ name: f.name, size: f.data.length, content_type: f.contentType }));
      const deliveryId = newId('whd');
      const done = await pool.query({ ...FINISH, values: [publicId, JSON.stringify(out.result ?? null), JSON.stringify(listed), deliveryId] });
      if (done.rows.length > 0) await webhooks.add('deliver', { delivery_id: deliveryId, attempt: 1 }, { jobId: deliveryId });
    },
    { connection: redis.duplicate(), concurrency: Number(env('FLOOR_CONCURRENCY')) },
  );
  await w.waitUntilReady();
  return async () => {
    await w.close();
    await webhooks.close();
  };
}

async function dispatcher(pool: pg.Pool, redis: Redis): Promise<() => Promise<void>> {
  const secret = env('FLOOR_WEBHOOK_SECRET');
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  const w = new Worker<{ delivery_id: string }>(
    FLOOR_WEBHOOK_QUEUE,
    async (job) => {
      const { rows } = await pool.query<{ id: string; url: string; task_status: number; public_id: string; kind: string; error_code: string | null; payload: string | null; result: string | null }>({
        ...CLAIM,
        values: [job.data.delivery_id],
      });
      const d = rows[0];
      if (!d) return;
      const body = webhookBody(d);
      const started = performance.now();
      const headers = webhookHeaders({ deliveryId: d.id, attempt: 1, secret, body, now: new Date() });
      const res = await request(d.url, { dispatcher: agent, method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body, headersTimeout: 10_000, bodyTimeout: 10_000 });
      await res.body.dump();
      await pool.query({ ...RECORD, values: [d.id, Math.round(performance.now() - started), res.statusCode] });
    },
    { connection: redis.duplicate(), concurrency: Number(env('FLOOR_CONCURRENCY')) },
  );
  await w.waitUntilReady();
  return async () => {
    await w.close();
    await agent.close();
  };
}

async function main(): Promise<void> {
  const role = process.argv[2];
  const roles = { api, worker, dispatcher } as const;
  if (role !== 'api' && role !== 'worker' && role !== 'dispatcher') throw new Error(`usage: floor-pipeline.ts ${Object.keys(roles).join('|')}`);
  const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 10 });
  const redis = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: null });
  const close = await roles[role](pool, redis);
  process.stdout.write(`floor ${role} ready ${process.env.PORT ?? 0}\n`);
  process.once('SIGTERM', () => {
    void close()
      .then(() => pool.end())
      .finally(() => {
        redis.disconnect();
        process.exit(0);
      });
  });
}

// Imported by pipeline-figures.ts for the queue names; run as a process otherwise.
if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
