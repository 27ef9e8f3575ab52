// A private Redis primary, one replica and three Sentinels (the same redis-server binary with
// `--sentinel`) on free ports, nothing persisted: what `REDIS_SENTINELS` points at in the tests and
// the chaos run. Failovers are real: the primary is killed and the Sentinels elect a leader and
// promote the replica; no command of ours tells them what to do.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import { endOrphanedServers, recordServer } from './owned-servers';
import { answersPing } from './redis-server';
import { waitFor } from './wait';

export const SENTINEL_MASTER_NAME = 'taskapi';

/**
 * Sentinel timings: a primary silent for 1 s is down, a quorum of 2 of the 3 agree, and a failover
 * that stalls is retried after 4 s. A failover completes in about 2-4 s.
 */
const DOWN_AFTER_MS = 1_000;
const FAILOVER_TIMEOUT_MS = 4_000;

export interface RedisSentinelGroup {
  /** The monitored primary's name (`REDIS_SENTINEL_NAME`). */
  name: string;
  /** `host:port,...` of the three Sentinels (`REDIS_SENTINELS`). */
  sentinels: string;
  sentinelPorts: number[];
  /** The two data nodes' ports; which one is the primary changes with each failover. */
  nodePorts: number[];
  /** The port of the primary the Sentinels name now (asked of the first Sentinel that answers). */
  primaryPort(): Promise<number>;
  /**
   * kill -9 of the primary, then waits until the Sentinels have promoted the replica and it takes a
   * write; the old primary is started again, empty, as the new one's replica once `rejoinAfterMs` passed.
   * Resolves with when the new primary took its first write (ms since the epoch).
   */
  failover(opts?: { rejoinAfterMs?: number; timeoutMs?: number }): Promise<{ oldPrimary: number; newPrimary: number; writableAt: number }>;
  /** kill -9 of the primary alone, the node whose ROLE says so (the Sentinels fail over if enough of them run); resolves with its port. */
  killPrimary(): Promise<number>;
  /** Until every running Sentinel names the same primary and that node's ROLE says it is one (a failover's news has spread). */
  untilSettled(timeoutMs?: number): Promise<number>;
  /** Until the Sentinels name `port` and it takes a write; resolves with when it did (ms since the epoch). */
  untilPrimary(port: number, timeoutMs?: number): Promise<number>;
  /** Starts a killed data node again, empty, as the replica of the current primary. */
  rejoin(port: number): Promise<void>;
  /** Both data nodes killed, `pauseMs` down, started again empty (the primary first, same roles). */
  restartEmpty(pauseMs: number): Promise<void>;
  /** Stops Sentinel `i` (kill -9) or starts it again with the configuration it had rewritten. */
  stopSentinel(i: number): Promise<void>;
  startSentinel(i: number): Promise<void>;
  /** Stops every process and removes the directory (unless the caller gave it). */
  stop(): Promise<void>;
  /** Where the servers' log files are. */
  dir: string;
}

interface Proc {
  child: ChildProcess;
  forget: () => void;
}

export async function startRedisSentinels(opts: { dir?: string } = {}): Promise<RedisSentinelGroup> {
  endOrphanedServers();
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-redis-sentinel-'));
  fs.mkdirSync(dir, { recursive: true });
  const nodePorts = [await freePort(), await freePort()];
  const sentinelPorts = [await freePort(), await freePort(), await freePort()];
  const procs = new Map<number, Proc>();

  const launch = async (port: number, args: string[]) => {
    const child = spawn('redis-server', args, { stdio: 'ignore', detached: true });
    const proc: Proc = { child, forget: recordServer(child.pid as number, 'redis-server') };
    procs.set(port, proc);
    child.once('exit', () => proc.forget());
    await waitFor(() => answersPing(port), { timeoutMs: 10_000, intervalMs: 25, what: `redis-server on ${port}` });
  };
  const kill = async (port: number) => {
    const proc = procs.get(port);
    procs.delete(port);
    if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.child.once('exit', resolve));
    proc.child.kill('SIGKILL');
    await exited;
  };
  const startNode = (port: number, primary?: number) =>
    launch(port, [
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      ...['--logfile', path.join(dir, `redis-${port}.log`), '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
      ...(primary === undefined ? [] : ['--replicaof', '127.0.0.1', String(primary)]),
    ]);
  const sentinelConf = (port: number) => path.join(dir, `sentinel-${port}.conf`);
  const startSentinelOn = (port: number) => launch(port, [sentinelConf(port), '--sentinel']);

  const ask = async (port: number, ...command: string[]): Promise<unknown> => {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.call(...(command as [string, ...string[]]));
    } finally {
      client.disconnect();
    }
  };
  const primaryPort = async (): Promise<number> => {
    for (const port of sentinelPorts) {
      if (!procs.has(port)) continue;
      const reply = (await ask(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME).catch(() => null)) as [string, string] | null;
      if (reply) return Number(reply[1]);
    }
    throw new Error('no Sentinel named a primary');
  };
  const isWritablePrimary = async (port: number) => {
    const role = (await ask(port, 'ROLE').catch(() => null)) as [string] | null;
    if (role?.[0] !== 'master') return false;
    return (await ask(port, 'SET', 'taskapi:test:sentinel-probe', String(Date.now())).catch(() => null)) === 'OK';
  };

  const untilPrimary = (port: number, timeoutMs = 30_000) =>
    waitFor(async () => (await primaryPort().catch(() => 0)) === port && (await isWritablePrimary(port)) && Date.now(), {
      timeoutMs,
      intervalMs: 25,
      what: `the Sentinels to promote ${port}`,
    });

  const stop = async () => {
    await Promise.all([...procs.keys()].map(kill));
    if (!opts.dir) fs.rmSync(dir, { recursive: true, force: true }); // a given directory is the caller's
  };
  try {
    const [primary, replica] = nodePorts as [number, number];
    await startNode(primary);
    await startNode(replica, primary);
    for (const port of sentinelPorts) {
      fs.writeFileSync(
        sentinelConf(port),
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `logfile ${path.join(dir, `sentinel-${port}.log`)}`,
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      await startSentinelOn(port);
    }
    // Ready once every Sentinel knows the replica and the other Sentinels (it can fail over).
    await waitFor(
      async () => {
        for (const port of sentinelPorts) {
          const info = (await ask(port, 'SENTINEL', 'MASTER', SENTINEL_MASTER_NAME)) as string[];
          const field = (name: string) => Number(info[info.indexOf(name) + 1]);
          if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) return false;
        }
        return true;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the Sentinels to know the replica and each other' },
    );
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    name: SENTINEL_MASTER_NAME,
    sentinels: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
    sentinelPorts,
    nodePorts,
    dir,
    primaryPort,
    async failover({ rejoinAfterMs = 0, timeoutMs = 30_000 } = {}) {
      const oldPrimary = await primaryPort();
      const newPrimary = nodePorts.find((p) => p !== oldPrimary) as number;
      await kill(oldPrimary);
      const writableAt = await untilPrimary(newPrimary, timeoutMs);
      if (rejoinAfterMs > 0) await new Promise((r) => setTimeout(r, rejoinAfterMs));
      await startNode(oldPrimary, newPrimary);
      return { oldPrimary, newPrimary, writableAt };
    },
    async killPrimary() {
      const roles = await Promise.all(nodePorts.map(async (p) => ((await ask(p, 'ROLE').catch(() => null)) as [string] | null)?.[0]));
      const port = nodePorts[roles.indexOf('master')];
      if (port === undefined) throw new Error(`no data node says it is the primary (ROLE: ${roles.join(', ')})`);
      await kill(port);
      return port;
    },
    untilSettled: (timeoutMs = 30_000) =>
      waitFor(
        async () => {
          const named = await Promise.all(
            sentinelPorts
              .filter((p) => procs.has(p))
              .map(async (p) => ((await ask(p, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME).catch(() => null)) as [string, string] | null)?.[1]),
          );
          const port = Number(named[0]);
          if (!named.every((n) => n !== undefined && Number(n) === port)) return false;
          const role = (await ask(port, 'ROLE').catch(() => null)) as [string] | null;
          return role?.[0] === 'master' && port;
        },
        { timeoutMs, intervalMs: 50, what: 'the Sentinels to agree on the primary' },
      ),
    untilPrimary,
    async rejoin(port) {
      await startNode(port, await primaryPort());
    },
    async restartEmpty(pauseMs) {
      const primary = await primaryPort();
      const replica = nodePorts.find((p) => p !== primary) as number;
      await Promise.all([kill(primary), kill(replica)]);
      await new Promise((r) => setTimeout(r, pauseMs));
      await startNode(primary);
      await startNode(replica, primary);
    },
    async stopSentinel(i) {
      await kill(sentinelPorts[i] as number);
    },
    async startSentinel(i) {
      await startSentinelOn(sentinelPorts[i] as number);
    },
    stop,
  };
}
