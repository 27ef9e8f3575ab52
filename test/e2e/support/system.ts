import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import tls from 'node:tls';
import type { Config } from '@taskapi/config';
import { createLogger, type Logger } from '@taskapi/logger';
import { connectBackends, type Backends } from '@taskapi/service';
import { claimRedisDb, descendants, isAlive, testCa, testConfig, testEnv, testRedisUrl, waitFor } from '@taskapi/testing';
import { startDispatcherService } from '../../../services/webhook-dispatcher/src/dispatcher-service';
import { startWorkerService } from '../../../services/worker/src/worker-service';
import { startApi, type TestApi } from '../../../services/api/test/support/harness';

const ROOT = path.resolve(__dirname, '../../..');

/** A Redis URL for one test file's own database, so its workers never take other files' jobs. */
export const redisUrl = testRedisUrl;

/** Empties a test Redis database (only one the suite owns: see `claimRedisDb`). */
export const flushRedis = claimRedisDb;

/**
 * Environment shared by every process of a test system. The sweepers look back an hour by
 * default, so they never pick up other test files' tasks in the shared test database.
 */
export function systemEnv(redisDb: number, overrides: Record<string, string> = {}): Record<string, string> {
  return { REDIS_URL: redisUrl(redisDb), SWEEPER_INTERVAL_MS: '3600000', ...overrides };
}

export interface Running {
  stop(): Promise<void>;
}

/** An in-process service; `opsUrl` is its /healthz, /readyz and /metrics server when OPS_PORT was given. */
export interface RunningService extends Running {
  opsUrl: string | undefined;
}

const opsUrl = (config: Config, port: number | undefined) => (port === undefined ? undefined : `http://${config.host}:${port}`);

/** Trust of the test CA for in-process services: Node's roots plus the CA (as NODE_EXTRA_CA_CERTS does for children). */
const egressTls = () => ({ ca: [...tls.rootCertificates, testCa().caCert] });

type ServiceStarter = (
  config: Config,
  logger: Logger,
  backends: Backends,
  opts: { egressTls: ReturnType<typeof egressTls> },
) => Promise<{ opsPort: number | undefined; stop(): Promise<void> }>;

/** A service in this process, on its own connections, as its main.ts wires it (but trusting the test CA). */
async function startInProcess(name: string, env: Record<string, string>, start: ServiceStarter, logStream?: NodeJS.WritableStream): Promise<RunningService> {
  const config = testConfig(env);
  const logger = createLogger({ service: name, level: config.logLevel, stream: logStream });
  const backends = await connectBackends(config, logger, `e2e-${name}`, 8);
  const service = await start(config, logger, backends, { egressTls: egressTls() });
  return {
    opsUrl: opsUrl(config, service.opsPort),
    async stop() {
      await service.stop();
      await backends.close();
    },
  };
}

/** The worker service in this process (real BullMQ workers, engines, egress client). */
export const startWorker = (env: Record<string, string>, opts: { logStream?: NodeJS.WritableStream } = {}) => startInProcess('worker', env, startWorkerService, opts.logStream);

/** The webhook dispatcher in this process. */
export const startDispatcher = (env: Record<string, string>) => startInProcess('dispatcher', env, startDispatcherService);

export interface ChildService extends Running {
  /** The process the test started: npm for `via: 'npm'`, else the service's node process. */
  child: ChildProcess;
  /** Every process of the service once it was ready (the started one and its descendants). */
  pids: number[];
  /** Parsed JSON log lines so far (other lines as `{ raw }`). */
  logs: Array<Record<string, unknown>>;
  /** Resolves when the started process has exited. */
  exited: Promise<void>;
  /**
   * Sends `signal` to the started process only, as a supervisor does, and waits for it to exit.
   * SIGKILL kills the whole process tree instead (a crash of the machine or container).
   */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Processes of `pids` still running. */
  leftovers(): number[];
}

/** How a test starts a service: the npm script users run, or the built entry the image runs. */
export type StartVia = 'npm' | 'node';

const NPM_SCRIPTS = { api: 'start:api', worker: 'start:worker', 'webhook-dispatcher': 'start:dispatcher' } as const;

/**
 * A service as its own process, started the way users start it: `npm run start:<service>` or
 * `node dist/<service>.js` (the image's command). The suite's global setup has built dist/.
 * Trusts the test CA through NODE_EXTRA_CA_CERTS. Resolves once it logged `readyLine`.
 */
export async function startChild(
  service: 'api' | 'worker' | 'webhook-dispatcher',
  env: Record<string, string>,
  readyLine: string,
  via: StartVia = 'npm',
): Promise<ChildService> {
  const childEnv = { ...process.env, ...testEnv({ LOG_LEVEL: 'info', ...env }), NODE_EXTRA_CA_CERTS: testCa().caFile };
  const [command, args] =
    via === 'npm'
      ? ['npm', ['run', '--silent', NPM_SCRIPTS[service]]]
      : [process.execPath, ['--enable-source-maps', path.join(ROOT, 'dist', `${service}.js`)]];
  const child = spawn(command, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  return superviseChild(service, child, readyLine);
}

/** Collects a started process's log lines and waits for `readyLine` (see `startChild`). */
export async function superviseChild(name: string, child: ChildProcess, readyLine: string | string[]): Promise<ChildService> {
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ raw: line });
    }
  });
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  // 'close', not 'exit': the last log lines (the graceful stop) may still be in the pipe at 'exit'.
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const readyLines = Array.isArray(readyLine) ? readyLine : [readyLine];
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): ${stderr}`);
        return readyLines.every((line) => logs.some((l) => l.message === line));
      },
      { timeoutMs: 60_000, what: `${name} to start` },
    );
  } catch (err) {
    // The test never gets the process to stop: one still waiting (for a dependency, say) would outlive the run.
    for (const pid of [...descendants(child.pid!)].reverse().concat(child.pid!).filter(isAlive)) process.kill(pid, 'SIGKILL');
    throw err;
  }
  const pids = [child.pid!, ...descendants(child.pid!)];
  const kill = async (signal: NodeJS.Signals) => {
    if (signal === 'SIGKILL') {
      for (const pid of [...pids].reverse().filter(isAlive)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    } else if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
    }
    await exited;
  };
  return { child, pids, logs, exited, kill, stop: () => kill('SIGTERM'), leftovers: () => pids.filter(isAlive) };
}

export interface TestSystem {
  api: TestApi;
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** A real API on its own Redis database (flushed first), plus whatever the test starts next to it. */
export async function startSystem(redisDb: number, overrides: Record<string, string> = {}): Promise<TestSystem> {
  const env = systemEnv(redisDb, overrides);
  await flushRedis(env.REDIS_URL!);
  const api = await startApi(env);
  return { api, env, stop: () => api.close() };
}
