import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import tls from 'node:tls';
import { Redis } from 'ioredis';
import type { Config } from '@taskapi/config';
import { createLogger, type Logger } from '@taskapi/logger';
import { connectBackends, type Backends } from '@taskapi/service';
import { TEST_REDIS_URL, testCa, testConfig, testEnv, waitFor } from '@taskapi/testing';
import { startDispatcherService } from '../../../services/webhook-dispatcher/src/dispatcher-service';
import { startWorkerService } from '../../../services/worker/src/worker-service';
import { startApi, type TestApi } from '../../../services/api/test/support/harness';

const ROOT = path.resolve(__dirname, '../../..');

/** A Redis URL for one test file's own database, so its workers never take other files' jobs. */
export function redisUrl(db: number): string {
  return TEST_REDIS_URL.replace(/\/\d+$/, `/${db}`);
}

export async function flushRedis(url: string): Promise<void> {
  const redis = new Redis(url);
  try {
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
}

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
async function startInProcess(name: string, env: Record<string, string>, start: ServiceStarter): Promise<RunningService> {
  const config = testConfig(env);
  const logger = createLogger({ service: name, level: config.logLevel });
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
export const startWorker = (env: Record<string, string>) => startInProcess('worker', env, startWorkerService);

/** The webhook dispatcher in this process. */
export const startDispatcher = (env: Record<string, string>) => startInProcess('dispatcher', env, startDispatcherService);

export interface ChildService extends Running {
  child: ChildProcess;
  /** Parsed JSON log lines so far. */
  logs: Array<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * A service as its own process (`services/<name>/src/main.ts` under tsx), as `npm run start:*`
 * runs it, trusting the test CA through NODE_EXTRA_CA_CERTS. Resolves once it logged `readyLine`.
 */
export async function startChild(service: 'worker' | 'webhook-dispatcher', env: Record<string, string>, readyLine: string): Promise<ChildService> {
  const childEnv = { ...process.env, ...testEnv({ LOG_LEVEL: 'info', ...env }), NODE_EXTRA_CA_CERTS: testCa().caFile };
  // `node --import tsx`, not the tsx CLI: the CLI runs the program in a second process, and a
  // signal sent to the wrapper would not reach the service.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, `services/${service}/src/main.ts`)], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`${service} exited (${child.exitCode}): ${stderr}`);
      return logs.some((l) => l.message === readyLine);
    },
    { timeoutMs: 30_000, what: `${service} to start` },
  );
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { child, logs, kill, stop: () => kill('SIGTERM') };
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
