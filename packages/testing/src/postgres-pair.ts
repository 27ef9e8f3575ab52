// A private PostgreSQL primary with a synchronous standby, behind HAProxy, for the failover tests and
// the chaos run (docs/high-availability.md, "PostgreSQL: a primary, a synchronous standby and a proxy"). The machine's own binaries: initdb,
// pg_basebackup -R (the standby streams from the primary; the primary waits for it on every commit:
// synchronous_standby_names = '*'), pg_ctl promote. HAProxy checks each node over HTTP the way it
// checks Patroni's REST API (`GET /primary`: 200 only from the node that takes writes); the check
// endpoints are served here, each asking its node `SELECT pg_is_in_recovery()`. A switch is
// scripted: fence the primary (stopped), promote the standby, let it commit without a standby
// until the old node has been rebuilt from it (pg_basebackup) and streams again.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './free-port';
import { endOrphanedServers, recordServer } from './owned-servers';
import { waitFor } from './wait';

const run = promisify(execFile);

export type PostgresStopMode = 'fast' | 'immediate';

export interface PostgresPair {
  /** A postgresql:// URL of database `name` through HAProxy (what the services get). */
  url(name: string): string;
  /** The same, straight to node `i` (0 or 1), bypassing the proxy. */
  nodeUrl(i: number, name: string): string;
  /** Index of the node that is primary now. */
  primary(): number;
  /**
   * The primary fenced (`pg_ctl stop -m <stopMode>`: `immediate` is a crash), the standby promoted;
   * resolves once the new primary has committed a write through HAProxy, with when that was (ms since
   * the epoch). The old node is then rebuilt as the new primary's synchronous standby in the
   * background (`rebuilt` resolves when it streams again).
   */
  switchover(opts?: { stopMode?: PostgresStopMode }): Promise<{ writableAt: number; rebuilt: Promise<void> }>;
  /** The primary stopped (`mode`), `pauseMs` down, started again (no promotion); resolves once it takes connections. */
  restartPrimary(mode: PostgresStopMode, pauseMs: number): Promise<void>;
  /** Stops HAProxy, both nodes and the checks; removes the directory (unless the caller gave it). */
  stop(): Promise<void>;
  dir: string;
}

/** The newest installed server's bin directory (as `pg_config --bindir` names it on Debian). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL server binaries under ${root} (initdb, pg_ctl, pg_basebackup)`);
  return path.join(root, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root, the clusters belong to (and run as) `postgres`. */
async function owner(): Promise<{ uid: number; gid: number; prefix: string[] } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid), gid: Number(gid), prefix: ['runuser', '-u', 'postgres', '--'] };
}

/** HAProxy's check interval and how many failed checks mark a node down. */
const CHECK_INTER_MS = 200;

export async function startPostgresPair(opts: { dir?: string } = {}): Promise<PostgresPair> {
  endOrphanedServers();
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-pg-pair-'));
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, 0o755);
  const bin = binDir();
  const user = await owner();
  if (user) fs.chownSync(dir, user.uid, user.gid);
  const asOwner = (tool: string, args: string[]) => {
    const [command, ...rest] = [...(user?.prefix ?? []), path.join(bin, tool), ...args];
    return run(command as string, rest, { maxBuffer: 4 * 1024 * 1024 });
  };

  const ports = [await freePort(), await freePort()];
  const dataDir = (i: number) => path.join(dir, `node${i}`);
  const logFile = (i: number) => path.join(dir, `node${i}.log`);
  const forgetServer = new Map<number, () => void>();
  let primary = 0;

  const options = (i: number) =>
    [
      `-p ${ports[i]}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=on',
      '-c max_connections=200',
      '-c wal_level=replica',
      '-c max_wal_senders=5',
      '-c hot_standby=on',
      `-c cluster_name=node${i}`,
      // A standby lost mid-commit must not hang the primary's commits for long: the walsender notices a dead peer within 2 s.
      '-c wal_sender_timeout=2s',
      '-c wal_receiver_status_interval=1s',
    ].join(' ');
  const start = async (i: number) => {
    await asOwner('pg_ctl', ['-D', dataDir(i), '-l', logFile(i), '-o', options(i), '-w', '-t', '60', 'start']);
    const pid = Number(fs.readFileSync(path.join(dataDir(i), 'postmaster.pid'), 'utf8').split('\n')[0]);
    forgetServer.set(i, recordServer(pid, 'postgres'));
  };
  const stopNode = async (i: number, mode: PostgresStopMode) => {
    await asOwner('pg_ctl', ['-D', dataDir(i), '-m', mode, '-w', '-t', '60', 'stop']).catch(() => undefined);
    forgetServer.get(i)?.();
  };
  const sql = async (i: number, text: string) => {
    const client = new pg.Client({ host: '127.0.0.1', port: ports[i], user: 'postgres', database: 'postgres', connectionTimeoutMillis: 2_000 });
    client.on('error', () => undefined); // the node stopped under it: the query below fails instead
    await client.connect();
    try {
      return (await client.query(text)).rows as Array<Record<string, unknown>>;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /** Makes node `i` a streaming standby of node `from` (a fresh base backup), and `from` wait for it again. */
  const buildStandby = async (i: number, from: number) => {
    fs.rmSync(dataDir(i), { recursive: true, force: true });
    await asOwner('pg_basebackup', ['-h', '127.0.0.1', '-p', String(ports[from]), '-U', 'postgres', '-D', dataDir(i), '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
    await start(i);
    await waitFor(async () => (await sql(from, "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'")).length > 0, {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: `node${i} streaming from node${from}`,
    });
    await sql(from, "ALTER SYSTEM SET synchronous_standby_names = '*'");
    await sql(from, 'SELECT pg_reload_conf()');
  };

  // The checks HAProxy asks: 200 from the node out of recovery, 503 from a standby or a dead node.
  const checks = await Promise.all(
    [0, 1].map(async (i) => {
      const server = http.createServer((_req, res) => {
        sql(i, 'SELECT pg_is_in_recovery() AS standby').then(
          (rows) => res.writeHead(rows[0]?.standby === false ? 200 : 503).end(),
          () => res.writeHead(503).end(),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return server;
    }),
  );
  const proxyPort = await freePort();
  const proxyConfig = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    proxyConfig,
    [
      'global',
      '  maxconn 2000',
      `  stats socket ${path.join(dir, 'haproxy.sock')} level operator`,
      'defaults',
      '  mode tcp',
      '  timeout connect 1s',
      '  timeout client 1h',
      '  timeout server 1h',
      '  timeout check 1s',
      'listen postgres',
      `  bind 127.0.0.1:${proxyPort}`,
      '  option httpchk GET /primary',
      '  http-check expect status 200',
      // A node that stops being primary is cut off at once: its sessions are closed, not left to write on.
      `  default-server inter ${CHECK_INTER_MS}ms fall 2 rise 1 on-marked-down shutdown-sessions`,
      ...[0, 1].map((i) => `  server node${i} 127.0.0.1:${ports[i]} check port ${(checks[i]!.address() as AddressInfo).port}`),
      '',
    ].join('\n'),
  );
  let proxy: ChildProcess | undefined;
  let forgetProxy: (() => void) | undefined;

  const url = (name: string) => `postgresql://postgres@127.0.0.1:${proxyPort}/${name}`;
  const writable = async () => {
    const client = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('CREATE TEMP TABLE taskapi_probe (x int); INSERT INTO taskapi_probe VALUES (1)');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  /** HAProxy's view: `UP`/`DOWN` (and transitional states) of each node, from its stats socket. */
  const proxyStates = () =>
    new Promise<string[]>((resolve, reject) => {
      const socket = net.connect(path.join(dir, 'haproxy.sock'));
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('error', reject);
      socket.on('end', () => {
        const rows = text.split('\n').map((line) => line.split(','));
        resolve([0, 1].map((i) => rows.find((r) => r[0] === 'postgres' && r[1] === `node${i}`)?.[17] ?? 'missing'));
      });
      socket.end('show stat\n');
    });
  /** Until HAProxy sends to the primary only (it starts with every node up until its checks say otherwise). */
  const proxyFollows = () =>
    waitFor(
      async () => {
        const states = await proxyStates();
        return states[primary] === 'UP' && states[1 - primary]!.startsWith('DOWN');
      },
      { timeoutMs: 15_000, intervalMs: 25, what: `HAProxy to send to node${primary} only` },
    );

  let rebuilding: Promise<void> | undefined;
  const stop = async () => {
    await rebuilding?.catch(() => undefined); // else its start could come after the stop below
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((resolve) => proxy!.once('exit', resolve));
      proxy.kill('SIGKILL');
      await exited;
    }
    forgetProxy?.();
    for (const server of checks) server.close();
    await Promise.all([0, 1].map((i) => stopNode(i, 'immediate')));
    if (!opts.dir) fs.rmSync(dir, { recursive: true, force: true }); // a given directory is the caller's
  };

  try {
    await asOwner('initdb', ['-D', dataDir(0), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    fs.appendFileSync(path.join(dataDir(0), 'pg_hba.conf'), 'host replication all 127.0.0.1/32 trust\n');
    await start(0);
    await buildStandby(1, 0);
    proxy = spawn('haproxy', ['-f', proxyConfig, '-db'], { stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'haproxy.log'), 'a')] });
    forgetProxy = recordServer(proxy.pid as number, 'haproxy');
    await waitFor(() => fs.existsSync(path.join(dir, 'haproxy.sock')), { timeoutMs: 10_000, what: 'HAProxy to start' });
    await proxyFollows();
    await waitFor(writable, { timeoutMs: 15_000, intervalMs: 50, what: 'PostgreSQL through HAProxy' });
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    dir,
    url,
    nodeUrl: (i, name) => `postgresql://postgres@127.0.0.1:${ports[i]}/${name}`,
    primary: () => primary,
    async switchover({ stopMode = 'immediate' } = {}) {
      const old = primary;
      const next = 1 - old;
      await stopNode(old, stopMode); // fenced: it can take no write, whatever the proxy believes
      // The promoted node commits alone until a standby is back (docs/high-availability.md).
      await sql(next, "ALTER SYSTEM SET synchronous_standby_names = ''");
      await asOwner('pg_ctl', ['-D', dataDir(next), '-w', '-t', '60', 'promote']);
      await sql(next, 'SELECT pg_reload_conf()');
      primary = next;
      const writableAt = await waitFor(async () => (await writable()) && Date.now(), { timeoutMs: 30_000, intervalMs: 25, what: `node${next} taking writes through HAProxy` });
      const rebuilt = buildStandby(old, next);
      rebuilt.catch(() => undefined); // the caller awaits it (or not); an unhandled rejection would end the process
      rebuilding = rebuilt;
      return { writableAt, rebuilt };
    },
    async restartPrimary(mode, pauseMs) {
      await stopNode(primary, mode);
      await new Promise((r) => setTimeout(r, pauseMs));
      await start(primary);
      await waitFor(writable, { timeoutMs: 30_000, intervalMs: 50, what: 'PostgreSQL through HAProxy after the restart' });
    },
    stop,
  };
}
