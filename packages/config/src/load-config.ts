import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { TASK_KINDS, type ApiKeyType as KeyType, type TaskKind as TaskKindName } from '@taskapi/domain';
import { z } from 'zod';

/** Requests allowed per key: an exact sliding minute and a rolling day in hourly buckets. */
export interface RateLimitPolicy {
  perMinute: number;
  perDay: number;
}

/** Thrown when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const DEFAULT_RETRY_DELAYS = '60000,300000,1800000,7200000,21600000';

const bool = (name: string) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: `${name} must be true or false` })
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = (name: string, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, { error: `${name} must be a whole number` })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: `${name} must be at least 1` }).max(max, { error: `${name} must be at most ${max}` }));

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { error: 'DATABASE_URL must be a postgresql:// URL' })
    .default('postgresql://postgres@127.0.0.1:5432/taskapi'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, { error: 'REDIS_URL must be a redis:// or rediss:// URL' })
    .default('redis://127.0.0.1:6379'),
  PORT: z
    .string()
    .regex(/^\d+$/, { error: 'PORT must be a port number' })
    .transform(Number)
    .pipe(z.number().int().min(0).max(65535, { error: 'PORT must be at most 65535' }))
    .default(3000),
  HOST: z.string().min(1).optional(),
  OPS_PORT: z
    .string()
    .regex(/^\d+$/, { error: 'OPS_PORT must be a port number' })
    .transform(Number)
    .pipe(z.number().int().min(0).max(65535, { error: 'OPS_PORT must be at most 65535' }))
    .optional(),
  PUBLIC_BASE_URL: z
    .url({ protocol: /^https?$/, error: 'PUBLIC_BASE_URL must be an http(s) URL' })
    .refine(
      (v) => {
        const u = new URL(v);
        return !u.search && !u.hash && !u.username && !u.password;
      },
      { error: 'PUBLIC_BASE_URL must have no query, fragment or credentials' },
    )
    .optional(),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d+)$/, { error: 'TRUST_PROXY must be true, false or a hop count' })
    .default('false'),
  JWT_SECRET: z.string().min(32, { error: 'JWT_SECRET must be at least 32 characters' }).optional(),
  SECRETS_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(v), {
      error: 'SECRETS_KEY must be 32 bytes encoded as base64',
    })
    .optional(),
  FILES_DIR: z.string().min(1).default('./data/files'),
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'http', 'debug', 'silent']).default('info'),
  WORKER_KINDS: z.string().default(TASK_KINDS.join(',')),
  WORKER_CONCURRENCY: positiveInt('WORKER_CONCURRENCY', 256).default(2),
  WORKER_LOCK_DURATION_MS: positiveInt('WORKER_LOCK_DURATION_MS', 600_000).default(30_000),
  SWEEPER_INTERVAL_MS: positiveInt('SWEEPER_INTERVAL_MS', 3_600_000).default(15_000),
  TASK_TIMEOUT_VIDEO_MS: positiveInt('TASK_TIMEOUT_VIDEO_MS', 3_600_000).default(120_000),
  TASK_TIMEOUT_IMAGE_MS: positiveInt('TASK_TIMEOUT_IMAGE_MS', 3_600_000).default(30_000),
  TASK_TIMEOUT_FACE_MS: positiveInt('TASK_TIMEOUT_FACE_MS', 3_600_000).default(30_000),
  ENGINE_VIDEO: z.enum(['builtin', 'http'], { error: 'ENGINE_VIDEO must be builtin or http' }).default('builtin'),
  ENGINE_IMAGE: z.enum(['builtin', 'http'], { error: 'ENGINE_IMAGE must be builtin or http' }).default('builtin'),
  ENGINE_FACE: z.enum(['builtin', 'http'], { error: 'ENGINE_FACE must be builtin or http' }).default('builtin'),
  VIDEO_FORMAT: z.enum(['auto', 'mp4', 'gif'], { error: 'VIDEO_FORMAT must be auto, mp4 or gif' }).default('auto'),
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  HTTP_ENGINE_URL: z.url({ protocol: /^https?$/, error: 'HTTP_ENGINE_URL must be an http(s) URL' }).optional(),
  HTTP_ENGINE_TOKEN: z.string().min(1).optional(),
  DISPATCHER_CONCURRENCY: positiveInt('DISPATCHER_CONCURRENCY', 1000).default(20),
  WEBHOOK_TIMEOUT_MS: positiveInt('WEBHOOK_TIMEOUT_MS', 120_000).default(10_000),
  WEBHOOK_RETRY_DELAYS_MS: z.string().default(DEFAULT_RETRY_DELAYS),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS').default(false),
  ADMIN_USER: z.string().min(1).optional(),
  ADMIN_PASSWORD: z.string().min(1).optional(),
  TASK_COST_VIDEO: positiveInt('TASK_COST_VIDEO', 1_000_000).default(10),
  TASK_COST_IMAGE: positiveInt('TASK_COST_IMAGE', 1_000_000).default(2),
  TASK_COST_FACE: positiveInt('TASK_COST_FACE', 1_000_000).default(1),
  RATE_LIMIT_PAID_PER_MINUTE: positiveInt('RATE_LIMIT_PAID_PER_MINUTE').default(300),
  RATE_LIMIT_PAID_PER_DAY: positiveInt('RATE_LIMIT_PAID_PER_DAY').default(100_000),
  RATE_LIMIT_TRIAL_PER_MINUTE: positiveInt('RATE_LIMIT_TRIAL_PER_MINUTE').default(20),
  RATE_LIMIT_TRIAL_PER_DAY: positiveInt('RATE_LIMIT_TRIAL_PER_DAY').default(1000),
  LOGIN_MAX_FAILURES_PER_EMAIL: positiveInt('LOGIN_MAX_FAILURES_PER_EMAIL').default(10),
  LOGIN_MAX_ATTEMPTS_PER_IP: positiveInt('LOGIN_MAX_ATTEMPTS_PER_IP').default(100),
  DATABASE_POOL_SIZE: positiveInt('DATABASE_POOL_SIZE', 500).default(10),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt('HTTP_KEEP_ALIVE_TIMEOUT_MS', 3_600_000).default(65_000),
  SHUTDOWN_DRAIN_MS: z
    .string()
    .regex(/^\d+$/, { error: 'SHUTDOWN_DRAIN_MS must be a whole number of milliseconds' })
    .transform(Number)
    .pipe(z.number().int().max(120_000, { error: 'SHUTDOWN_DRAIN_MS must be at most 120000' }))
    .optional(),
  DEV_SECRETS_FILE: z.string().min(1).default('.dev-secrets.json'),
});

/** The parsed, frozen configuration of a process. Built once by `loadConfig`. */
export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  databaseUrl: string;
  redisUrl: string;
  port: number;
  /** Listen address of the API and the ops servers: `HOST`, else 0.0.0.0 in production and 127.0.0.1 otherwise. */
  host: string;
  /** Worker and dispatcher: port of /healthz, /readyz and /metrics (on `host`); unset = not served. */
  opsPort: number | undefined;
  /**
   * Origin (and optional path prefix) clients reach the API at, no trailing slash: builds `Location`,
   * file URLs and the console's same-origin check. `PUBLIC_BASE_URL`, required in production;
   * otherwise derived from `host` and `port` (e.g. `http://127.0.0.1:3000`). Never from a request.
   */
  publicBaseUrl: string;
  trustProxy: boolean | number;
  jwtSecret: string;
  /** 32-byte AES-256-GCM key for API keys and webhook secrets at rest. */
  secretsKey: Buffer;
  filesDir: string;
  logLevel: 'error' | 'warn' | 'info' | 'http' | 'debug' | 'silent';
  workerKinds: readonly TaskKindName[];
  workerConcurrency: number;
  /** BullMQ job lock: a worker that dies mid-task is noticed (job "stalled") within about twice this. */
  workerLockDurationMs: number;
  /** How often each worker/dispatcher re-enqueues what the database says is pending (after Redis loss). */
  sweeperIntervalMs: number;
  /** Per-kind deadline of one engine run; past it the run is aborted and the task fails with `timeout`. */
  taskTimeoutsMs: Readonly<Record<TaskKindName, number>>;
  /** Which engine runs each kind: the built-in CPU engine, or the `http` engine at `httpEngine.url`. */
  engines: Readonly<Record<TaskKindName, 'builtin' | 'http'>>;
  httpEngine: { url: string; token: string | undefined } | undefined;
  /** Built-in video engine output: `mp4` needs ffmpeg with libx264; `auto` picks mp4 when it is there, else `gif`. */
  videoFormat: 'auto' | 'mp4' | 'gif';
  ffmpegPath: string;
  /** Webhook attempts one dispatcher process sends at once (I/O bound). */
  dispatcherConcurrency: number;
  webhookTimeoutMs: number;
  /** Delay before each retry, measured from the previous attempt. */
  webhookRetryDelaysMs: readonly number[];
  webhookAllowPrivateNetworks: boolean;
  /**
   * Bull Board operator login. `ADMIN_USER`/`ADMIN_PASSWORD`; in development, when unset, generated
   * once and kept in the development secrets file. Unset in production and tests: the board refuses
   * every request.
   */
  admin: AdminCredentials | undefined;
  /** Credits charged per task kind. */
  taskCosts: Readonly<Record<TaskKindName, number>>;
  rateLimits: Readonly<Record<KeyType, RateLimitPolicy>>;
  login: { maxFailuresPerEmail: number; maxAttemptsPerIp: number };
  databasePoolSize: number;
  /**
   * API: how long an idle keep-alive connection stays open. Longer than the idle timeout of the
   * load balancer in front (60 s for AWS ALB and nginx by default), so the balancer closes first
   * and never sends a request on a connection the API is closing.
   */
  keepAliveTimeoutMs: number;
  /**
   * API: after SIGTERM, how long `/readyz` answers 503 while requests are still served, so load
   * balancers stop sending before the listener closes. Default 5000 in production, else 0.
   */
  shutdownDrainMs: number;
  /** Non-fatal remarks made while loading (e.g. generated development secrets); log them at start. */
  warnings: readonly string[];
}

/** Basic-auth login of the operators' pages (Bull Board). */
export interface AdminCredentials {
  user: string;
  password: string;
  /** Absolute path of the development secrets file when the login was generated there; else undefined. */
  generatedIn: string | undefined;
}

function parseList<T>(raw: string, name: string, item: (s: string) => T | undefined): T[] {
  const parts = raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  const out: T[] = [];
  for (const p of parts) {
    const v = item(p);
    if (v === undefined) throw new ConfigError(`${name}: "${p}" is not valid`);
    out.push(v);
  }
  if (out.length === 0) throw new ConfigError(`${name} must not be empty`);
  return out;
}

interface DevSecrets {
  JWT_SECRET: string;
  SECRETS_KEY: string;
  ADMIN_USER: string;
  ADMIN_PASSWORD: string;
}

const DEV_ADMIN_USER = 'admin';

/**
 * Development only: secrets generated once and kept in a git-ignored file, so that every local
 * process (api, worker, dispatcher) and every restart share them.
 */
function devSecrets(file: string): DevSecrets {
  const abs = path.resolve(file);
  const fresh: DevSecrets = {
    JWT_SECRET: randomBytes(48).toString('base64url'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    ADMIN_USER: DEV_ADMIN_USER,
    ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
  };
  try {
    fs.writeFileSync(abs, JSON.stringify(fresh, null, 2), { flag: 'wx', mode: 0o600 });
    return fresh;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stored = JSON.parse(fs.readFileSync(abs, 'utf8')) as Partial<DevSecrets>;
  if (!stored.JWT_SECRET || !stored.SECRETS_KEY) throw new ConfigError(`${abs} is incomplete; delete it to regenerate`);
  if (stored.ADMIN_USER && stored.ADMIN_PASSWORD) return stored as DevSecrets;
  // A file from before the Bull Board login was generated. Its SECRETS_KEY must survive (stored keys
  // depend on it), so the login is added in place. Processes starting together may all get here:
  // deriving the password from the stored secret, rather than drawing a random one, makes every
  // one of them compute and write the same file, so none is left holding a password the file lost.
  const upgraded: DevSecrets = {
    JWT_SECRET: stored.JWT_SECRET,
    SECRETS_KEY: stored.SECRETS_KEY,
    ADMIN_USER: DEV_ADMIN_USER,
    ADMIN_PASSWORD: createHmac('sha256', stored.JWT_SECRET).update('bull-board admin password').digest('base64url').slice(0, 24),
  };
  const tmp = `${abs}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(upgraded, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, abs);
  return upgraded;
}

/** Where clients reach us when `PUBLIC_BASE_URL` is not set: this host and port, never a wildcard. */
function derivedBaseUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? 'localhost' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * Parses and validates the environment. Throws `ConfigError` naming each bad variable.
 * Call once per process (in `main.ts`) and pass the result down.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') cleaned[k] = v;
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  const warnings: string[] = [];

  const production = e.NODE_ENV === 'production';
  if ((e.ADMIN_USER === undefined) !== (e.ADMIN_PASSWORD === undefined)) {
    throw new ConfigError('Invalid configuration:\n  ADMIN_USER and ADMIN_PASSWORD must be set together');
  }
  if (production) {
    const missing: string[] = [];
    if (!e.JWT_SECRET || !e.SECRETS_KEY) {
      const names = [!e.JWT_SECRET && 'JWT_SECRET', !e.SECRETS_KEY && 'SECRETS_KEY'].filter(Boolean).join(', ');
      missing.push(`${names}: required when NODE_ENV=production`);
    }
    if (!e.PUBLIC_BASE_URL) {
      missing.push('PUBLIC_BASE_URL: required when NODE_ENV=production (the URL clients reach the API at, e.g. https://tasks.example.com)');
    }
    if (missing.length > 0) throw new ConfigError(`Invalid configuration:\n  ${missing.join('\n  ')}`);
  }

  let jwtSecret = e.JWT_SECRET;
  let secretsKey = e.SECRETS_KEY;
  let admin: AdminCredentials | undefined =
    e.ADMIN_USER && e.ADMIN_PASSWORD ? { user: e.ADMIN_USER, password: e.ADMIN_PASSWORD, generatedIn: undefined } : undefined;
  // Tests (NODE_ENV=test) get no generated login: they must never create or read the developer's
  // secrets file, and a board without a login refuses every request anyway.
  const generateAdmin = !admin && e.NODE_ENV === 'development';
  if (!production && (!jwtSecret || !secretsKey || generateAdmin)) {
    const generated = devSecrets(e.DEV_SECRETS_FILE);
    if (!jwtSecret) {
      jwtSecret = generated.JWT_SECRET;
      warnings.push(`JWT_SECRET is not set; using a generated development secret from ${e.DEV_SECRETS_FILE}`);
    }
    if (!secretsKey) {
      secretsKey = generated.SECRETS_KEY;
      warnings.push(`SECRETS_KEY is not set; using a generated development key from ${e.DEV_SECRETS_FILE}`);
    }
    if (generateAdmin) {
      admin = { user: generated.ADMIN_USER, password: generated.ADMIN_PASSWORD, generatedIn: path.resolve(e.DEV_SECRETS_FILE) };
    }
  }
  // Unreachable in production (checked above); narrows the types for the code below.
  if (!jwtSecret || !secretsKey) throw new ConfigError('Invalid configuration:\n  JWT_SECRET, SECRETS_KEY: missing');

  const host = e.HOST ?? (production ? '0.0.0.0' : '127.0.0.1');
  const publicBaseUrl = e.PUBLIC_BASE_URL ? e.PUBLIC_BASE_URL.replace(/\/+$/, '') : derivedBaseUrl(host, e.PORT);

  const kinds = parseList(e.WORKER_KINDS, 'WORKER_KINDS', (s) =>
    (TASK_KINDS as readonly string[]).includes(s) ? (s as TaskKindName) : undefined,
  );
  const delays = parseList(e.WEBHOOK_RETRY_DELAYS_MS, 'WEBHOOK_RETRY_DELAYS_MS', (s) =>
    /^\d+$/.test(s) ? Number(s) : undefined,
  );

  const engines = Object.freeze({
    'video-generation': e.ENGINE_VIDEO,
    'image-generation': e.ENGINE_IMAGE,
    'face-detection': e.ENGINE_FACE,
  });
  if (Object.values(engines).includes('http') && !e.HTTP_ENGINE_URL) {
    throw new ConfigError('Invalid configuration:\n  HTTP_ENGINE_URL: required when an ENGINE_* variable is http');
  }

  const trustProxy = e.TRUST_PROXY === 'true' ? true : e.TRUST_PROXY === 'false' ? false : Number(e.TRUST_PROXY);

  const config: Config = {
    nodeEnv: e.NODE_ENV,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    port: e.PORT,
    host,
    opsPort: e.OPS_PORT,
    publicBaseUrl,
    trustProxy,
    jwtSecret,
    secretsKey: Buffer.from(secretsKey, 'base64'),
    filesDir: path.resolve(e.FILES_DIR),
    logLevel: e.LOG_LEVEL,
    workerKinds: Object.freeze([...new Set(kinds)]),
    workerConcurrency: e.WORKER_CONCURRENCY,
    workerLockDurationMs: e.WORKER_LOCK_DURATION_MS,
    sweeperIntervalMs: e.SWEEPER_INTERVAL_MS,
    taskTimeoutsMs: Object.freeze({
      'video-generation': e.TASK_TIMEOUT_VIDEO_MS,
      'image-generation': e.TASK_TIMEOUT_IMAGE_MS,
      'face-detection': e.TASK_TIMEOUT_FACE_MS,
    }),
    engines,
    videoFormat: e.VIDEO_FORMAT,
    ffmpegPath: e.FFMPEG_PATH,
    httpEngine: e.HTTP_ENGINE_URL ? { url: e.HTTP_ENGINE_URL.replace(/\/+$/, ''), token: e.HTTP_ENGINE_TOKEN } : undefined,
    dispatcherConcurrency: e.DISPATCHER_CONCURRENCY,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookRetryDelaysMs: Object.freeze(delays),
    webhookAllowPrivateNetworks: e.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    admin,
    taskCosts: Object.freeze({
      'video-generation': e.TASK_COST_VIDEO,
      'image-generation': e.TASK_COST_IMAGE,
      'face-detection': e.TASK_COST_FACE,
    }),
    rateLimits: Object.freeze({
      paid: Object.freeze({ perMinute: e.RATE_LIMIT_PAID_PER_MINUTE, perDay: e.RATE_LIMIT_PAID_PER_DAY }),
      trial: Object.freeze({ perMinute: e.RATE_LIMIT_TRIAL_PER_MINUTE, perDay: e.RATE_LIMIT_TRIAL_PER_DAY }),
    }),
    login: { maxFailuresPerEmail: e.LOGIN_MAX_FAILURES_PER_EMAIL, maxAttemptsPerIp: e.LOGIN_MAX_ATTEMPTS_PER_IP },
    databasePoolSize: e.DATABASE_POOL_SIZE,
    keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS ?? (production ? 5_000 : 0),
    warnings: Object.freeze(warnings),
  };
  return Object.freeze(config);
}

/**
 * Only `DATABASE_URL`, for tools that need nothing else (the migration step runs before any
 * service secrets exist).
 */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const parsed = envSchema.shape.DATABASE_URL.safeParse(env.DATABASE_URL || undefined);
  if (!parsed.success) throw new ConfigError(`Invalid configuration:\n  DATABASE_URL: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
