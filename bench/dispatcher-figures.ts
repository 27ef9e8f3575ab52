// Dispatcher deliveries/s against its baseline: a raw undici HTTPS POST + HMAC loop
// (bench/raw-sender.ts, its own process like the dispatcher) with the dispatcher's concurrency,
// the same bodies and the same receiver. Interleaved rounds (raw, dispatcher, raw, …).
//
// Driving the dispatcher at full speed: each round inserts N finished tasks with a pending
// delivery each (one SQL statement), then adds the N first-attempt jobs in one BullMQ addBulk to a
// dispatcher that is already running; the round lasts from the addBulk to the N-th webhook's
// arrival. The dispatcher does all of its real work per delivery (load the delivery, decrypt the
// secret, sign, claim the attempt, POST, record the result, log a line).
import { fork } from 'node:child_process';
import path from 'node:path';
import type pg from 'pg';
import { webhookBody } from '@taskapi/domain';
import { createWebhookQueue, deliveryJobId } from '@taskapi/queue';
import { testCa } from '@taskapi/testing';
import { Redis } from 'ioredis';
import { startBuilt, stop } from './processes';
import { cpuMs } from './runtime-figures';
import type { RawSendOrder } from './raw-sender';
import { nowMs, type BenchReceiver } from './receiver';
import { median } from './stats';

export interface DispatcherContext {
  pool: pg.Pool;
  accountId: string;
  keyId: string;
  webhookSecret: string;
  env: NodeJS.ProcessEnv;
  redisUrl: string;
  receiver: BenchReceiver;
  concurrency: number;
}

export interface DispatcherFigures {
  deliveries: number;
  rounds: Array<{ raw: number; dispatcher: number; ratio: number; rawCpuMs: number; dispatcherCpuMs: number }>;
  raw: number;
  dispatcher: number;
  /** Median of the per-round ratios dispatcher / raw, in %. */
  ratio: number;
  /** CPU time per webhook of the sending process (median of the rounds), in ms. */
  rawCpuMs: number;
  dispatcherCpuMs: number;
  bodyBytes: number;
  /** BullMQ alone: a worker that does nothing with the same number of jobs at the same concurrency. */
  floor: { jobsPerSecond: number; cpuMsPerJob: number };
}

interface Seeded {
  deliveryId: string;
  body: string;
}

/** N finished tasks of the account, each with a pending delivery to `url` (not yet enqueued). */
async function seedDeliveries(ctx: DispatcherContext, url: string, n: number): Promise<Seeded[]> {
  const { rows } = await ctx.pool.query<{ id: string; public_id: string; payload: string }>(
    `WITH t AS (
       INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, input, payload, callback_url, cost, attempts, started_at, finished_at)
       SELECT 'task_' || substr(md5(random()::text || i), 1, 22), $1, $2, 'image-generation', 20, '{"prompt":"dispatcher bench"}',
              json_build_object('order_id', 'bench-' || i), $3, 1, 1, now(), now()
         FROM generate_series(1, $4) i
       RETURNING id, public_id, payload::text AS payload
     ), d AS (
       INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, next_attempt_at)
       SELECT 'whd_' || substr(md5(random()::text || t.id), 1, 22), t.id, $1, $3, 20, now() + interval '1 hour' FROM t
       RETURNING id, task_id
     )
     SELECT d.id, t.public_id, t.payload FROM d JOIN t ON t.id = d.task_id`,
    [ctx.accountId, ctx.keyId, url, n],
  );
  return rows.map((r) => ({
    deliveryId: r.id,
    body: webhookBody({ public_id: r.public_id, task_status: 20, kind: 'image-generation', error_code: null, payload: r.payload, result: null }),
  }));
}

/** One run of bench/bullmq-floor.ts in its own process (see there). */
function bullmqFloor(redisUrl: string, jobs: number, concurrency: number, env: NodeJS.ProcessEnv): Promise<DispatcherFigures['floor']> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'bullmq-floor.ts'), [redisUrl, String(jobs), String(concurrency)], {
      execArgv: ['--import', 'tsx'],
      env,
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`bullmq-floor exited with ${code}`);
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as DispatcherFigures['floor']);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/** The raw sender's process: started once, sent one order per round. */
async function startRawSender(env: NodeJS.ProcessEnv) {
  const child = fork(path.join(__dirname, 'raw-sender.ts'), [], { execArgv: ['--import', 'tsx'], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = (key: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m);
      };
      const onExit = (code: number | null) => reject(new Error(`raw sender exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  await next('started');
  return {
    pid: child.pid!,
    /** Loads the webhooks, then times from "go" to the last one's arrival at `path`. */
    async send(order: RawSendOrder, receiver: BenchReceiver, urlPath: string): Promise<number> {
      child.send({ order });
      await next('ready');
      const t0 = nowMs();
      const done = next('done');
      child.send({ go: true });
      const arrivals = await receiver.waitFor(urlPath, order.webhooks.length, 120_000);
      const result = await done;
      if (result.error || result.failures) throw new Error(`raw sender: ${String(result.error ?? `${String(result.failures)} failures`)}`);
      return Math.max(...arrivals.map((a) => a.at)) - t0;
    },
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ exit: true });
      await exited;
    },
  };
}

export async function dispatcherFigures(ctx: DispatcherContext, opts: { deliveries: number; rounds: number }): Promise<DispatcherFigures> {
  const n = opts.deliveries;
  const env = { ...ctx.env, DISPATCHER_CONCURRENCY: String(ctx.concurrency) };
  const dispatcher = await startBuilt('webhook-dispatcher', env);
  const raw = await startRawSender(ctx.env);
  const redis = new Redis(ctx.redisUrl, { maxRetriesPerRequest: 1 });
  const webhooks = createWebhookQueue(redis);
  const ca = testCa().caCert;
  const tag = Date.now();
  let bodyBytes = 0;

  const rawRound = async (name: string, count: number) => {
    const urlPath = `/raw-${tag}-${name}`;
    const seeded = await seedDeliveries(ctx, ctx.receiver.url(`/unused-${tag}-${name}`), count);
    bodyBytes = Buffer.byteLength(seeded[0]!.body);
    const order: RawSendOrder = {
      ca,
      secret: ctx.webhookSecret,
      concurrency: ctx.concurrency,
      webhooks: seeded.map((s) => ({ url: ctx.receiver.url(urlPath), deliveryId: s.deliveryId, body: s.body })),
    };
    return (1000 * count) / (await raw.send(order, ctx.receiver, urlPath));
  };
  const dispatcherRound = async (name: string, count: number) => {
    const urlPath = `/dispatch-${tag}-${name}`;
    const seeded = await seedDeliveries(ctx, ctx.receiver.url(urlPath), count);
    const t0 = nowMs();
    await webhooks.queue.addBulk(
      // The job the worker enqueues when a task finishes (it names the account).
      seeded.map((s) => ({ name: 'deliver', data: { delivery_id: s.deliveryId, attempt: 1, account_id: ctx.accountId }, opts: { jobId: deliveryJobId(s.deliveryId, 1) } })),
    );
    const arrivals = await ctx.receiver.waitFor(urlPath, count, 120_000);
    const ms = Math.max(...arrivals.map((a) => a.at)) - t0;
    // The last results are being recorded: let that finish before the next round starts.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const { rows } = await ctx.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE url = $1 AND state = 'succeeded'", [ctx.receiver.url(urlPath)]);
      if (rows[0]!.n >= count) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return (1000 * count) / ms;
  };

  try {
    // Warm-up: connections, JIT, prepared statements.
    const warmUp = Math.max(200, Math.ceil(n / 4));
    await rawRound('warm-up', warmUp);
    await dispatcherRound('warm-up', warmUp);
    const rounds = [];
    for (let r = 1; r <= opts.rounds; r++) {
      let cpu = cpuMs(raw.pid);
      const rawRate = await rawRound(String(r), n);
      const rawCpuMs = (cpuMs(raw.pid) - cpu) / n;
      cpu = cpuMs(dispatcher.pid!);
      const dispatcherRate = await dispatcherRound(String(r), n);
      const dispatcherCpuMs = (cpuMs(dispatcher.pid!) - cpu) / n;
      rounds.push({ raw: rawRate, dispatcher: dispatcherRate, ratio: (100 * dispatcherRate) / rawRate, rawCpuMs, dispatcherCpuMs });
    }
    const floor = await bullmqFloor(ctx.redisUrl, n, ctx.concurrency, ctx.env);
    return {
      deliveries: n,
      floor,
      rounds,
      raw: median(rounds.map((r) => r.raw)),
      dispatcher: median(rounds.map((r) => r.dispatcher)),
      ratio: median(rounds.map((r) => r.ratio)),
      rawCpuMs: median(rounds.map((r) => r.rawCpuMs)),
      dispatcherCpuMs: median(rounds.map((r) => r.dispatcherCpuMs)),
      bodyBytes,
    };
  } finally {
    await webhooks.queue.close();
    redis.disconnect();
    await raw.close();
    await stop(dispatcher);
  }
}
