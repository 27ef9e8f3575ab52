// Section 13 of `npm run bench`: what steering costs (docs/performance.md, "Steering (section 13)").
//
// 1. The queue position on `GET /api/tasks/{id}`: a queued task at the back of its account's line
//    of `line` tasks (`queue.ahead` = line − 1) against a queued task alone in its line, at 50
//    connections, interleaved rounds; and, one request at a time with Redis's SLOWLOG recording
//    every command, the Redis time of each GET's script calls (the rate limit with the marker
//    prefetch, and the position).
// 2. Bulk cancel by filter of `cancel` queued tasks: the request's wall time, tasks per second, and
//    how long it held anything: the longest PostgreSQL statement of it seen running (pg_stat_activity
//    sampled every 2 ms) and the longest Redis script call (SLOWLOG).
//
// The lines are filled through the API's own batch creation (100 tasks a request, 4 at a time);
// no worker runs in this section, so every task stays queued in its account's line.
import pg from 'pg';
import { Redis } from 'ioredis';
import { median } from './stats';

export interface SteeringFigures {
  line: number;
  /** GET req/s, median over rounds: the back of the long line, alone in its line. */
  readLong: number;
  readShort: number;
  /** Median of the rounds' ratios long / short, in %. */
  ratio: number;
  p99Long: number;
  p99Short: number;
  /** Redis µs per GET in script calls, median of the sequential reads. */
  redisUsLong: number;
  redisUsShort: number;
  rounds: Array<{ long: number; short: number }>;
  cancels: Array<{ tasks: number; seconds: number; longestStatementMs: number; longestScriptMs: number; statements: number }>;
}

export interface SteeringContext {
  base: string;
  databaseUrl: string;
  redisUrl: string;
  /** Paid keys of three accounts with large balances: the long line's, the short line's, the cancel's. */
  keys: [string, string, string];
  rounds: number;
  load: (name: string, url: string, headers: Record<string, string>) => Promise<{ rps: number; p99: number }>;
}

const BATCH = 100;
const PARALLEL = 4;

async function post<T>(url: string, key: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as T;
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${JSON.stringify(json).slice(0, 200)}`);
  return json;
}

/** `n` queued image tasks of the key's account, through batch creation; the last one's public id. */
async function fillLine(base: string, key: string, n: number): Promise<string> {
  let made = 0;
  let last = '';
  const url = `${base}/api/tasks/image-generation/batch`;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (made < n) {
        const size = Math.min(BATCH, n - made);
        made += size;
        const { data } = await post<{ data: Array<{ public_id: string }> }>(url, key, { tasks: Array.from({ length: size }, () => ({ prompt: 'bench line', width: 64, height: 64 })) });
        last = data[data.length - 1]!.public_id;
      }
    }),
  );
  return last;
}

/** SLOWLOG on for every command while `fn` runs; the durations (µs) of the script calls it saw. */
async function scriptCalls(redisUrl: string, fn: () => Promise<void>): Promise<number[]> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const [, threshold] = (await redis.config('GET', 'slowlog-log-slower-than')) as [string, string];
  const [, maxLen] = (await redis.config('GET', 'slowlog-max-len')) as [string, string];
  try {
    await redis.config('SET', 'slowlog-max-len', '1000000');
    await redis.slowlog('RESET');
    await redis.config('SET', 'slowlog-log-slower-than', '0');
    await fn();
    await redis.config('SET', 'slowlog-log-slower-than', threshold);
    const entries = (await redis.slowlog('GET', -1)) as Array<[number, number, number, string[]]>;
    return entries.filter((e) => /^eval/i.test(e[3][0] ?? '')).map((e) => e[2]);
  } finally {
    await redis.config('SET', 'slowlog-log-slower-than', threshold);
    await redis.config('SET', 'slowlog-max-len', maxLen);
    await redis.slowlog('RESET');
    redis.disconnect();
  }
}

/** Sequential GETs of one task: Redis µs per GET in script calls, median. */
async function redisPerRead(ctx: SteeringContext, url: string, key: string, reads: number): Promise<number> {
  const calls = await scriptCalls(ctx.redisUrl, async () => {
    for (let i = 0; i < reads; i++) {
      const res = await fetch(url, { headers: { 'x-api-key': key } });
      await res.arrayBuffer();
    }
  });
  return calls.reduce((a, b) => a + b, 0) / reads;
}

/** A bulk cancel by filter of every task of the key's account, with what it held and for how long. */
async function timedCancel(ctx: SteeringContext, key: string, tasks: number): Promise<SteeringFigures['cancels'][number]> {
  const watcher = new pg.Client({ connectionString: ctx.databaseUrl });
  await watcher.connect();
  let longestStatementMs = 0;
  const statements = new Set<string>();
  let watching = true;
  const watch = (async () => {
    while (watching) {
      const { rows } = await watcher.query<{ pid: number; started: string; ms: number }>(
        `SELECT pid, query_start::text AS started, extract(epoch FROM clock_timestamp() - query_start) * 1000 AS ms
           FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%status = 40%' AND pid <> pg_backend_pid()`,
      );
      for (const r of rows) {
        statements.add(`${r.pid} ${r.started}`);
        longestStatementMs = Math.max(longestStatementMs, Number(r.ms));
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  let seconds = 0;
  let cancelled = 0;
  const scripts = await scriptCalls(ctx.redisUrl, async () => {
    const start = performance.now();
    ({ cancelled } = await post<{ cancelled: number }>(`${ctx.base}/api/tasks/cancel`, key, { filter: { status: 0 } }));
    seconds = (performance.now() - start) / 1000;
  });
  watching = false;
  await watch;
  await watcher.end();
  if (cancelled !== tasks) throw new Error(`bulk cancel cancelled ${cancelled} of ${tasks}`);
  return { tasks, seconds, longestStatementMs, longestScriptMs: Math.max(0, ...scripts) / 1000, statements: statements.size };
}

export async function steeringFigures(ctx: SteeringContext, line: number, cancel: number): Promise<SteeringFigures> {
  const [longKey, shortKey, cancelKey] = ctx.keys;
  const back = await fillLine(ctx.base, longKey, line);
  const alone = await fillLine(ctx.base, shortKey, 1);
  const longUrl = `${ctx.base}/api/tasks/${back}`;
  const shortUrl = `${ctx.base}/api/tasks/${alone}`;
  const place = (await (await fetch(longUrl, { headers: { 'x-api-key': longKey } })).json()) as { queue: { ahead: number } | null };
  if (place.queue?.ahead !== line - 1) throw new Error(`the back of the line is ${JSON.stringify(place.queue)} ahead, not ${line - 1}`);

  // Warm-up, then interleaved rounds.
  await ctx.load('warm-up', shortUrl, { 'x-api-key': shortKey });
  const rounds: SteeringFigures['rounds'] = [];
  const p99 = { long: [] as number[], short: [] as number[] };
  for (let r = 0; r < ctx.rounds; r++) {
    const s = await ctx.load('alone in its line', shortUrl, { 'x-api-key': shortKey });
    const l = await ctx.load(`back of ${line}`, longUrl, { 'x-api-key': longKey });
    rounds.push({ long: l.rps, short: s.rps });
    p99.long.push(l.p99);
    p99.short.push(s.p99);
  }
  const redisUsShort = await redisPerRead(ctx, shortUrl, shortKey, 300);
  const redisUsLong = await redisPerRead(ctx, longUrl, longKey, 300);

  await fillLine(ctx.base, cancelKey, cancel);
  const cancels = [await timedCancel(ctx, cancelKey, cancel), await timedCancel(ctx, longKey, line)];
  return {
    line,
    readLong: median(rounds.map((r) => r.long)),
    readShort: median(rounds.map((r) => r.short)),
    ratio: median(rounds.map((r) => (100 * r.long) / r.short)),
    p99Long: median(p99.long),
    p99Short: median(p99.short),
    redisUsLong,
    redisUsShort,
    rounds,
    cancels,
  };
}
