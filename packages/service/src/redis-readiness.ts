import { Redis, ReplyError } from 'ioredis';
import type { Logger } from '@taskapi/logger';
import type { RedisTarget } from './redis-client';
import { ReadinessProblem } from './readiness';

/** How long one Sentinel may take to accept a connection, and then to answer: within the 2 s of a readiness check. */
const SENTINEL_TIMEOUT_MS = 600;

/** What one Sentinel said about the primary: its address, or why it said nothing. */
export type SentinelAnswer = { sentinel: string; primary: string } | { sentinel: string; problem: string };

/**
 * Asks every Sentinel of `target` where the primary named `REDIS_SENTINEL_NAME` is (SENTINEL
 * GET-MASTER-ADDR-BY-NAME), each on a short-lived connection that never retries.
 */
export async function askSentinels(target: RedisTarget): Promise<SentinelAnswer[]> {
  const name = target.redisSentinelName!;
  return Promise.all(
    target.redisSentinels!.map(async ({ host, port }): Promise<SentinelAnswer> => {
      const sentinel = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      const client = new Redis({
        host,
        port,
        ...(target.redisSentinelPassword ? { password: target.redisSentinelPassword } : {}),
        ...(new URL(target.redisUrl).protocol === 'rediss:' ? { tls: {} } : {}),
        lazyConnect: true,
        enableReadyCheck: false,
        connectTimeout: SENTINEL_TIMEOUT_MS,
        commandTimeout: SENTINEL_TIMEOUT_MS,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        retryStrategy: () => null,
      });
      let socketError: { code?: string; message?: string } | undefined;
      client.on('error', (err: Error) => (socketError ??= err)); // reported below, as this Sentinel's problem
      try {
        await client.connect();
        const reply = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string] | null;
        return reply ? { sentinel, primary: `${reply[0]}:${reply[1]}` } : { sentinel, problem: `knows no primary named ${name}` };
      } catch (err) {
        // A refusal (not a Sentinel, a wrong password) is the server's own words; else the socket's error code.
        if (err instanceof ReplyError) return { sentinel, problem: `refused: ${(err as Error).message.slice(0, 120)}` };
        const e = socketError ?? (err as { code?: string; message?: string });
        return { sentinel, problem: `unreachable (${e.code ?? e.message ?? 'no answer'})` };
      } finally {
        client.disconnect();
      }
    }),
  );
}

/** Each Sentinel and what it said, for messages: `127.0.0.1:26379 names 10.0.0.5:6379; 127.0.0.1:26380 unreachable (ECONNREFUSED)`. */
export function describeAnswers(answers: readonly SentinelAnswer[]): string {
  return answers.map((a) => ('primary' in a ? `${a.sentinel} names ${a.primary}` : `${a.sentinel} ${a.problem}`)).join('; ');
}

/**
 * What is wrong with the Sentinels' answers, or undefined when at least one answered and every one
 * that answered names the same primary. One unreachable Sentinel out of three is not a problem
 * (the others still agree and can fail over); readiness says so only when none answers or they
 * disagree, naming each Sentinel and what it said.
 */
export function sentinelProblem(name: string, answers: readonly SentinelAnswer[]): string | undefined {
  const primaries = new Set(answers.flatMap((a) => ('primary' in a ? [a.primary] : [])));
  if (primaries.size === 1) return undefined;
  return `${primaries.size === 0 ? `no Redis Sentinel named the primary ${name}` : `the Redis Sentinels disagree on the primary ${name}`}: ${describeAnswers(answers)}`;
}

/**
 * The readiness check of Redis: PING through the service's own connection. With Sentinels, the
 * Sentinels are asked too, so `/readyz` names them when none answers or they disagree (a split
 * after a failover) instead of a bare `unavailable`.
 */
export function redisReadinessCheck(redis: { ping(): Promise<unknown> }, target: RedisTarget): () => Promise<unknown> {
  if (!target.redisSentinels || !target.redisSentinelName) return () => redis.ping();
  const name = target.redisSentinelName;
  return async () => {
    const [ping, answers] = await Promise.all([redis.ping().then(() => undefined, (err: unknown) => err), askSentinels(target)]);
    const problem = sentinelProblem(name, answers);
    if (problem) throw new ReadinessProblem(problem);
    if (ping !== undefined) throw new ReadinessProblem(`the primary ${name} did not answer PING; ${describeAnswers(answers)}`);
  };
}

/** Why Redis does not answer, as far as we can tell: with Sentinels, which one said what. */
export async function describeRedisProblem(target: RedisTarget): Promise<string> {
  if (!target.redisSentinels || !target.redisSentinelName) return 'Redis does not answer';
  const answers = await askSentinels(target);
  return sentinelProblem(target.redisSentinelName, answers) ?? `the primary ${target.redisSentinelName} does not answer; ${describeAnswers(answers)}`;
}

/** How often a service that cannot reach Redis at start says why. */
const WAITING_REPORT_MS = 5_000;

/**
 * While a service waits for Redis at start: a warning every few seconds saying why (which
 * Sentinels are unreachable or disagree). Returns the function that stops it.
 */
export function reportWhileWaitingForRedis(target: RedisTarget, logger: Logger): () => void {
  const timer = setInterval(() => {
    void describeRedisProblem(target).then((problem) => logger.warn('waiting for Redis', { problem }));
  }, WAITING_REPORT_MS);
  return () => clearInterval(timer);
}
