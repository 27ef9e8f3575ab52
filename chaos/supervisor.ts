// A small process manager for the services under chaos: runs each as `npm run start:*` does (node
// on the built file), appends its output to a log file, restarts it after a pause whenever it
// exits (killed by us or not), and remembers what it saw in the logs that matters to the audit.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { READY_LINE, serviceCommand, type Service } from '../bench/runtime-figures';

const ROOT = path.resolve(__dirname, '..');

export interface ServiceLogFacts {
  /** Lines the API logs when it answers 500 (`unhandled error`), as logged. */
  unhandled: string[];
  /**
   * Warning and error lines by `<level>: <message>`, plus the sweepers' reports: the recovery paths
   * the chaos made the services take.
   */
  notable: Map<string, number>;
}

/** Info lines that say a recovery path ran. */
const RECOVERY_INFO = /recovered|re-enqueued/;

export interface SupervisedService {
  name: Service;
  /** The running process, if any. */
  pid(): number | undefined;
  /** kill -9; the supervisor starts it again after `pauseMs`; resolves when it logged ready. */
  kill9(pauseMs: number): Promise<number>;
  /** Resolves when the current process logged its ready line (fails after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  /** Starts that did not come from our kills: crashes after ready, and exits before ready. */
  unexpected: { crashes: number; failedStarts: number };
  logs: ServiceLogFacts;
  /** SIGTERM (the graceful path); SIGKILL if it is not gone within `timeoutMs`. Not restarted. */
  stop(timeoutMs?: number): Promise<void>;
}

export function supervise(name: Service, env: NodeJS.ProcessEnv, logFile: string, restartPauseMs = 500): SupervisedService {
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  const logs: ServiceLogFacts = { unhandled: [], notable: new Map() };
  const unexpected = { crashes: 0, failedStarts: 0 };
  let child: ChildProcess | undefined;
  let isReady = false;
  let killedByUs = false;
  let stopping = false;
  let nextPauseMs = restartPauseMs;
  let waiters: Array<() => void> = [];
  let exited: Promise<void> = Promise.resolve();

  const onLine = (line: string) => {
    if (!isReady && line.includes(`"${READY_LINE[name]}"`)) {
      isReady = true;
      for (const w of waiters.splice(0)) w();
    }
    let entry: { level?: unknown; message?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      entry = { level: 'raw', message: line };
    }
    const message = String(entry.message);
    if (entry.level === 'info' && !RECOVERY_INFO.test(message)) return;
    if (entry.level !== 'info' && entry.level !== 'warn' && entry.level !== 'error' && entry.level !== 'stderr' && entry.level !== 'raw') return;
    const key = `${String(entry.level)}: ${message}`;
    logs.notable.set(key, (logs.notable.get(key) ?? 0) + 1);
    if (message === 'unhandled error') logs.unhandled.push(line);
  };

  const start = () => {
    const [command, args] = serviceCommand(name, 'built');
    // Its own process group: a Ctrl-C in the terminal reaches only the chaos run, which stops it.
    const c = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child = c;
    isReady = false;
    c.stdout!.pipe(log, { end: false });
    c.stderr!.pipe(log, { end: false });
    readline.createInterface({ input: c.stdout! }).on('line', onLine);
    // Anything a service writes outside its JSON logger (a crash, a library printing an error):
    // the first line of each (stack frames and printed object fields are indented or closing).
    readline.createInterface({ input: c.stderr! }).on('line', (line) => {
      if (/^\S/.test(line) && !/^[}\])]/.test(line)) onLine(line.startsWith('{') ? line : JSON.stringify({ level: 'stderr', message: line }));
    });
    exited = new Promise((resolve) =>
      c.once('exit', () => {
        const wasReady = isReady;
        isReady = false;
        child = undefined;
        if (!stopping) {
          if (!killedByUs) {
            if (wasReady) unexpected.crashes++;
            else unexpected.failedStarts++;
          }
          killedByUs = false;
          const pause = nextPauseMs;
          nextPauseMs = restartPauseMs;
          setTimeout(() => {
            if (!stopping) start();
          }, pause);
        }
        resolve();
      }),
    );
  };

  const ready = (timeoutMs = 60_000) =>
    isReady
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${name} did not become ready within ${timeoutMs} ms (log: ${logFile})`)), timeoutMs);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });

  start();
  return {
    name,
    pid: () => child?.pid,
    unexpected,
    logs,
    ready,
    async kill9(pauseMs) {
      const c = child;
      if (!c?.pid) throw new Error(`${name} is not running`);
      killedByUs = true;
      nextPauseMs = pauseMs;
      c.kill('SIGKILL');
      await exited;
      await ready();
      return c.pid;
    },
    async stop(timeoutMs = 20_000) {
      stopping = true;
      waiters = [];
      const c = child;
      if (c) {
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      await new Promise((resolve) => log.end(resolve));
    },
  };
}
