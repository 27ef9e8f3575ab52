// Servers a test process starts (redis-server) would outlive it when the process is killed before
// its cleanup runs (Ctrl-C, a closed output pipe, a CI timeout). Each one is recorded with the pid
// of the process that owns it; the next start of a server ends those whose owner is gone.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlive, processName } from './processes';

const DIR = path.join(os.tmpdir(), 'taskapi-test-servers');

/** Records `pid` (a `name` process) as this process's; the returned function forgets it once stopped. */
export function recordServer(pid: number, name: string): () => void {
  fs.mkdirSync(DIR, { recursive: true });
  const file = path.join(DIR, String(pid));
  fs.writeFileSync(file, JSON.stringify({ owner: process.pid, name }));
  return () => fs.rmSync(file, { force: true });
}

/** Ends the recorded servers whose owner is gone (a pid reused by another program is left alone). */
export function endOrphanedServers(): void {
  let files: string[];
  try {
    files = fs.readdirSync(DIR);
  } catch {
    return; // nothing recorded yet
  }
  for (const file of files) {
    const pid = Number(file);
    let record: { owner: number; name: string };
    try {
      record = JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as typeof record;
    } catch {
      continue; // being written, or removed meanwhile
    }
    if (isAlive(record.owner)) continue;
    if (isAlive(pid) && processName(pid) === record.name) process.kill(pid, 'SIGKILL');
    fs.rmSync(path.join(DIR, file), { force: true });
  }
}
