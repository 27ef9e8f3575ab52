import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port';
import { endOrphanedServers, recordServer } from './owned-servers';
import { isAlive } from './processes';
import { waitFor } from './wait';

const run = promisify(execFile);

export interface LocalRedisCluster {
  /** `host:port,...` of the masters, as `REDIS_CLUSTER_NODES` takes it. */
  nodes: string;
  ports: number[];
  /** Stops exactly the servers this cluster started and removes its directory. */
  stop(): Promise<void>;
}

/**
 * Starts a private Redis Cluster of `masters` masters (no replicas, nothing persisted) on free
 * ports, for one test file: it owns every key there, so no database numbers or prefixes are needed.
 * Resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(masters = 3): Promise<LocalRedisCluster> {
  endOrphanedServers();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-redis-cluster-'));
  const ports: number[] = [];
  const pids: number[] = [];
  const forget: Array<() => void> = [];
  const stop = async () => {
    await Promise.all(ports.map((port) => run('redis-cli', ['-p', String(port), 'shutdown', 'nosave']).catch(() => undefined)));
    await waitFor(() => pids.every((pid) => !isAlive(pid)), { timeoutMs: 10_000, what: 'Redis Cluster nodes to exit' }).catch(() => {
      // A node that ignored SHUTDOWN (hung): ours by its pid file, so end it.
      for (const pid of pids.filter(isAlive)) process.kill(pid, 'SIGKILL');
    });
    for (const f of forget) f();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      // The cluster bus gets its own free port (`cluster-port`), not the default port + 10000.
      const [port, busPort] = [await freePort(), await freePort()];
      const pidFile = path.join(dir, `redis-${port}.pid`);
      await run('redis-server', [
        ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`)],
        ...['--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'yes', '--pidfile', pidFile],
      ]);
      ports.push(port);
      const pid = await waitFor(() => (fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim())) || undefined, { timeoutMs: 10_000, what: `redis-server on ${port}` });
      pids.push(pid);
      forget.push(recordServer(pid, 'redis-server'));
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    await waitFor(
      async () => {
        const infos = await Promise.all(ports.map((p) => run('redis-cli', ['-p', String(p), 'cluster', 'info']).then((r) => r.stdout)));
        return infos.every((info) => info.includes('cluster_state:ok'));
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'Redis Cluster state ok on every node' },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes: ports.map((p) => `127.0.0.1:${p}`).join(','), ports, stop };
}
