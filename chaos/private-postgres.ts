// The run's own PostgreSQL cluster (initdb in the run directory, a free port, trust auth on
// 127.0.0.1 only), so restarting it never touches the shared server on 5432.
//
// Durability: fsync=off for speed, but synchronous_commit stays on, so every commit has written
// its WAL to the kernel before the client hears "committed". Our restarts stop the server process
// (`-m fast`, or `-m immediate`, which is a crash followed by WAL recovery), never the machine, so
// the kernel still holds that WAL and no committed transaction can be lost: anything the audit
// finds missing was never committed.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from '@taskapi/testing';

const run = promisify(execFile);

export type StopMode = 'fast' | 'immediate';

export interface PrivatePostgres {
  /** A postgresql:// URL of database `name` on this cluster. */
  url(name: string): string;
  /** Stops the server (`mode`), waits `pauseMs`, starts it again; resolves once it accepts connections. */
  restart(mode: StopMode, pauseMs: number): Promise<void>;
  /** Stops the server (immediate) and deletes the cluster. */
  remove(): Promise<void>;
}

/** The newest installed server's bin directory (Debian keeps each version under /usr/lib/postgresql). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL server binaries under ${root} (initdb, pg_ctl)`);
  return path.join(root, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root, the cluster belongs to (and runs as) `postgres`. */
async function owner(): Promise<{ uid: number; gid: number; prefix: string[] } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid), gid: Number(gid), prefix: ['runuser', '-u', 'postgres', '--'] };
}

export async function startPrivatePostgres(dir: string, logFile: string): Promise<PrivatePostgres> {
  const bin = binDir();
  const user = await owner();
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dir, { recursive: true });
  if (user) {
    fs.chownSync(dir, user.uid, user.gid);
    fs.closeSync(fs.openSync(logFile, 'a'));
    fs.chownSync(logFile, user.uid, user.gid);
  }
  const asOwner = (tool: string, args: string[]) => {
    const [command, ...rest] = [...(user?.prefix ?? []), path.join(bin, tool), ...args];
    return run(command as string, rest, { maxBuffer: 4 * 1024 * 1024 });
  };
  const port = await freePort();
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=on -c max_connections=200`;
  const start = () => asOwner('pg_ctl', ['-D', dataDir, '-l', logFile, '-o', serverOptions, '-w', '-t', '60', 'start']);
  const stop = (mode: StopMode) => asOwner('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop']);

  await asOwner('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  await start();
  return {
    url: (name) => `postgresql://postgres@127.0.0.1:${port}/${name}`,
    async restart(mode, pauseMs) {
      await stop(mode);
      await delay(pauseMs);
      await start();
    },
    async remove() {
      await stop('immediate').catch(() => undefined); // a failed restart may have left it up or down
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
