import path from 'node:path';
import type { ApiKeyType } from '@taskapi/domain';
import { isTaskKind, perTaskKind, TASK_KINDS } from '@taskapi/task-kinds';
import { z } from 'zod';
import { ConfigError } from './config-error';
import { devSecrets } from './dev-secrets';
import { commaList, envSchema, flag, millisecondsFromZero, named, parseEnv, portNumber, variable, variablesOf, wholeNumber, type Parsed } from './env-settings';

/** `host:port,...` (IPv6 hosts in brackets), e.g. Redis Cluster nodes or Sentinels. */
const hostPortList = () =>
  commaList((s) => {
    const m = /^([^\s:/]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(s);
    const port = Number(m?.[2]);
    return m && port >= 1 && port <= 65535 ? { host: m[1]!.replace(/^\[|\]$/g, ''), port } : undefined;
  })
    .transform((nodes) => Object.freeze(nodes))
    .optional();

const httpUrl = (problem: string) => z.url({ protocol: /^https?$/, ...named(problem) });
const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

/** Instrumentations that are off unless `OTEL_NODE_ENABLED_INSTRUMENTATIONS` names them. */
export const OPTIONAL_INSTRUMENTATIONS = ['pg', 'ioredis'] as const;
export type OptionalInstrumentation = (typeof OPTIONAL_INSTRUMENTATIONS)[number];

/** OpenTelemetry (docs/architecture.md, "Tracing"): the standard `OTEL_*` names, read here like every other variable. */
const telemetrySettings = {
  /** `true`: the SDK is not started at all (no spans, no `traceparent`, no `trace_id` on lines). */
  sdkDisabled: variable('OTEL_SDK_DISABLED', flag().default(false)),
  /** OTLP/HTTP base URL of a collector (`/v1/traces` is appended); unset = nothing is exported. */
  endpoint: variable('OTEL_EXPORTER_OTLP_ENDPOINT', httpUrl('must be an http(s) URL').transform(withoutTrailingSlash).optional()),
  /**
   * Encoding of the exports: `http/json` (the default here: the cheaper one to encode in Node,
   * docs/performance.md "Tracing (section 11)") or `http/protobuf` (the specification's default).
   */
  protocol: variable(
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    z.enum(['http/json', 'http/protobuf'], named('must be http/json or http/protobuf (grpc is not supported)')).default('http/json'),
  ),
  /** `name=value,...` sent with every export (a collector's API key): a secret, never logged. */
  headers: variable(
    'OTEL_EXPORTER_OTLP_HEADERS',
    commaList((s) => {
      const eq = s.indexOf('=');
      return eq > 0 ? ([decodeURIComponent(s.slice(0, eq).trim()), decodeURIComponent(s.slice(eq + 1).trim())] as const) : undefined;
    })
      .transform((pairs) => Object.freeze(Object.fromEntries(pairs)) as Readonly<Record<string, string>>)
      .optional(),
  ),
  /** `service.name` of the spans; default the service's own (`api`, `worker`, `webhook-dispatcher`). */
  serviceName: variable('OTEL_SERVICE_NAME', z.string().min(1).optional()),
  /**
   * The standard `OTEL_NODE_ENABLED_INSTRUMENTATIONS`: `pg` and `ioredis` add a span per
   * PostgreSQL and Redis command inside a traced request or run (opt-in: they are most of a trace's
   * spans and cost). `http` and `undici`, the task's own request spans, are always on and may be named.
   */
  enabledInstrumentations: variable(
    'OTEL_NODE_ENABLED_INSTRUMENTATIONS',
    commaList((s) => (OPTIONAL_INSTRUMENTATIONS.includes(s as OptionalInstrumentation) || s === 'http' || s === 'undici' ? s : undefined))
      .transform((names) => Object.freeze(names.filter((n): n is OptionalInstrumentation => OPTIONAL_INSTRUMENTATIONS.includes(n as OptionalInstrumentation))))
      .optional(),
  ),
  /** Share of new traces recorded when exporting, 0 to 1 (parent-based: a sampled caller's trace is kept). */
  samplerRatio: variable(
    'OTEL_TRACES_SAMPLER_ARG',
    z.string().regex(/^(0(\.\d+)?|1(\.0+)?)$/, named('must be a number from 0 to 1')).transform(Number).default(1),
  ),
};

/** The OpenTelemetry settings alone: services read them before anything else loads (see @taskapi/telemetry). */
export type TelemetryConfig = Parsed<typeof telemetrySettings>;

/**
 * Every variable, once: its name, checks and default, at the config field it becomes. Fields that
 * depend on other variables are finished in `complete` below. `.default(value)` is the parsed
 * value; `.prefault(text)` is a default text that goes through the same parsing as a set one.
 */
const settings = {
  nodeEnv: variable('NODE_ENV', z.enum(['development', 'production', 'test']).default('development')),
  databaseUrl: variable(
    'DATABASE_URL',
    z.string().regex(/^postgres(ql)?:\/\//, named('must be a postgresql:// URL')).default('postgresql://postgres@127.0.0.1:5432/taskapi'),
  ),
  redisUrl: variable('REDIS_URL', z.string().regex(/^rediss?:\/\//, named('must be a redis:// or rediss:// URL')).default('redis://127.0.0.1:6379')),
  port: variable('PORT', portNumber().default(3000)),
  /**
   * `host:port,...` of Redis Cluster nodes (a few suffice; the rest are discovered): every Redis use
   * goes to the cluster, with `REDIS_URL`'s user, password and `rediss://` (TLS) applied to each node.
   */
  redisClusterNodes: variable('REDIS_CLUSTER_NODES', hostPortList()),
  /**
   * `host:port,...` of Redis Sentinels watching the primary named `REDIS_SENTINEL_NAME`: every Redis
   * use goes to the primary they name (and follows it across a failover), with `REDIS_URL`'s user,
   * password, database number and `rediss://` applied to it. docs/high-availability.md.
   */
  redisSentinels: variable('REDIS_SENTINELS', hostPortList()),
  /** The monitored primary's name (`sentinel monitor <name> …`); required with `REDIS_SENTINELS`. */
  redisSentinelName: variable('REDIS_SENTINEL_NAME', z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, named('must be 1-64 of A-Z a-z 0-9 . _ -')).optional()),
  /** The Sentinels' own password (`requirepass` in sentinel.conf), when they have one: a secret, never logged. */
  redisSentinelPassword: variable('REDIS_SENTINEL_PASSWORD', z.string().min(1).optional()),
  host: variable('HOST', z.string().min(1).optional()),
  /** Worker and dispatcher: port of /healthz, /readyz and /metrics (on `host`); unset = not served. */
  opsPort: variable('OPS_PORT', portNumber().optional()),
  publicBaseUrl: variable(
    'PUBLIC_BASE_URL',
    httpUrl('must be an http(s) URL')
      .refine((v) => {
        const u = new URL(v);
        return !u.search && !u.hash && !u.username && !u.password;
      }, named('must have no query, fragment or credentials'))
      .transform(withoutTrailingSlash)
      .optional(),
  ),
  /**
   * Origins whose pages may read `/api/public/*` (browser read tokens, docs/api.md): comma-separated
   * origins (`https://app.example.com`, scheme, host and port only) or `*` for any. Unset or empty:
   * no CORS headers at all.
   */
  corsAllowedOrigins: variable(
    'CORS_ALLOWED_ORIGINS',
    z
      .string()
      .transform((raw, ctx): readonly string[] => {
        const items = raw.split(',').map((t) => t.trim()).filter((t) => t.length > 0);
        if (items.length === 1 && items[0] === '*') return ['*'];
        for (const text of items) {
          let origin: string | undefined;
          try {
            const u = new URL(text);
            origin = (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === text ? u.origin : undefined;
          } catch {
            origin = undefined;
          }
          if (!origin) ctx.issues.push({ code: 'custom', message: `"${text}" is not an origin (scheme://host[:port], no path or trailing slash), and * stands alone`, input: raw });
        }
        return items;
      })
      .optional(),
  ),
  /**
   * How many reverse proxies in front of the API append to `X-Forwarded-For`: the client address
   * (login throttle, key-reveal audit) is the entry that many hops from the right; 0 = the socket's peer.
   * `false` means 0; `true` (believe the left-most entry, which any client can forge) is refused
   * in production.
   */
  trustProxy: variable(
    'TRUST_PROXY',
    z
      .string()
      .regex(/^(true|false|\d{1,2})$/, named('must be a hop count (0 to 99), false or true'))
      .transform((v): number | true => (v === 'true' ? true : v === 'false' ? 0 : Number(v)))
      .prefault('0'),
  ),
  jwtSecret: variable('JWT_SECRET', z.string().min(32, named('must be at least 32 characters')).optional()),
  secretsKey: variable(
    'SECRETS_KEY',
    z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(v), named('must be 32 bytes encoded as base64'))
      .optional(),
  ),
  filesDir: variable('FILES_DIR', z.string().min(1).transform((dir) => path.resolve(dir)).prefault('./data/files')),
  /** Where task inputs and outputs live: `fs` (under `FILES_DIR`, shared by every replica) or `s3` (a bucket). */
  storageDriver: variable('STORAGE_DRIVER', z.enum(['fs', 's3'], named('must be fs or s3')).default('fs')),
  /** `STORAGE_DRIVER=s3`: the bucket (created by the operator) and how to reach it; credentials come from the standard AWS variables. */
  s3: {
    bucket: variable('S3_BUCKET', z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, named('must be a bucket name (3-63 of a-z 0-9 . -)')).optional()),
    region: variable('S3_REGION', z.string().min(1).default('us-east-1')),
    endpoint: variable('S3_ENDPOINT', httpUrl('must be an http(s) URL').transform(withoutTrailingSlash).optional()),
    forcePathStyle: variable('S3_FORCE_PATH_STYLE', flag().default(false)),
  },
  /** Lifetime of a signed `files[].url` (7 days at most: the longest an S3 presigned URL may live). */
  fileUrlTtlSeconds: variable('FILE_URL_TTL_SECONDS', wholeNumber(604_800).default(3600)),
  /** Days after which a terminal task's stored inputs and outputs are deleted (the worker's retention job). */
  retentionDays: variable('RETENTION_DAYS', wholeNumber(36_500).default(30)),
  logLevel: variable('LOG_LEVEL', z.enum(['error', 'warn', 'info', 'http', 'debug', 'silent']).default('info')),
  workerKinds: variable(
    'WORKER_KINDS',
    commaList((s) => (isTaskKind(s) ? s : undefined))
      .transform((kinds) => Object.freeze([...new Set(kinds)]))
      .prefault(TASK_KINDS.join(',')),
  ),
  workerConcurrency: variable('WORKER_CONCURRENCY', wholeNumber(256).default(2)),
  /** BullMQ job lock: a worker that dies mid-task is noticed (job "stalled") within about twice this. */
  workerLockDurationMs: variable('WORKER_LOCK_DURATION_MS', wholeNumber(600_000).default(30_000)),
  /**
   * Fair scheduling (docs/fair-scheduling.md): tasks one account may have running at once, all kinds
   * together, unless the operator gave the account its own cap (`admin set-max-running`).
   * Set the same value on every service.
   */
  accountMaxRunning: variable('ACCOUNT_MAX_RUNNING', wholeNumber(10_000).default(10)),
  /** Wait before a task's first retry after a transient engine failure; doubled for each further one. */
  taskRetryBackoffMs: variable('TASK_RETRY_BACKOFF_MS', wholeNumber(3_600_000).default(5_000)),
  /** Bench only (refused in production): tasks go first in, first out, without fair scheduling, for comparison. */
  benchFifoScheduling: variable('BENCH_FIFO_SCHEDULING', flag().default(false)),
  /** How often each worker/dispatcher re-enqueues what the database says is pending (after Redis loss). */
  sweeperIntervalMs: variable('SWEEPER_INTERVAL_MS', wholeNumber(3_600_000).default(15_000)),
  /** Every service: after this long with an idle event loop following work, give grown memory back (0: never). */
  memoryReleaseIdleMs: variable('MEMORY_RELEASE_IDLE_MS', millisecondsFromZero(3_600_000, 'never').default(10_000)),
  /** Per-kind deadline of one engine run; past it the run is aborted and the task fails with `timeout`. */
  taskTimeoutsMs: perTaskKind((kind) => variable(kind.timeoutMs.variable, wholeNumber(3_600_000).default(kind.timeoutMs.default))),
  /** Which engine runs each kind: the built-in CPU engine, or a Cog model server at `cog[kind].url` (docs/models.md). */
  engines: perTaskKind((kind) =>
    variable(
      kind.engine.variable,
      z
        .string()
        .refine((v) => v !== 'http', named(`http is retired: run the model behind a Cog server, set this to cog and ${kind.engine.cogUrl} (docs/models.md)`))
        .pipe(z.enum(['builtin', 'cog'], named('must be builtin or cog')))
        .default('builtin'),
    ),
  ),
  /** Per kind: its Cog model server, and the renaming of input fields its model expects (`ours=theirs,...`). */
  cog: perTaskKind((kind) => ({
    url: variable(kind.engine.cogUrl, httpUrl('must be an http(s) URL').transform(withoutTrailingSlash).optional()),
    /** Predictions one worker sends the kind's model server at once: its model's `concurrency.max` (Cog's default 1). */
    maxConcurrency: variable(kind.engine.cogMaxConcurrency, wholeNumber(1000).default(1)),
    inputMap: variable(
      kind.engine.cogInputMap,
      commaList((pair) => {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z_][A-Za-z0-9_]*)$/.exec(pair);
        return m && kind.engine.modelInputs.includes(m[1]!) ? ([m[1]!, m[2]!] as const) : undefined;
      })
        .refine((pairs) => new Set(pairs.map(([ours]) => ours)).size === pairs.length, named('renames a field twice'))
        .transform((pairs) => Object.freeze(Object.fromEntries(pairs) as Record<string, string>))
        .optional(),
    ),
  })),
  /** Where model servers post their prediction webhooks: the API's origin as they reach it (default PUBLIC_BASE_URL). */
  cogWebhookBaseUrl: variable('COG_WEBHOOK_BASE_URL', httpUrl('must be an http(s) URL').transform(withoutTrailingSlash).optional()),
  /** A task a busy model server refused (409, or BUSY) is offered again after this long, no attempt spent. */
  cogBusyRetryMs: variable('COG_BUSY_RETRY_MS', wholeNumber(600_000).default(2_000)),
  /**
   * A task that has waited this long in all on busy or unavailable model servers (409, STARTING,
   * BUSY, SETUP_FAILED, DEFUNCT, UNHEALTHY) fails with `model_unavailable`, refunded (docs/models.md).
   */
  modelBusyTimeoutMs: variable('MODEL_BUSY_TIMEOUT_MS', wholeNumber(7 * 86_400_000).pipe(z.number().min(1_000, named('must be at least 1000'))).default(1_800_000)),
  /** Largest file a model may return (each output), in bytes; a larger one fails the task (`engine_error`). */
  cogOutputMaxBytes: variable('COG_OUTPUT_MAX_BYTES', wholeNumber(2 * 1024 ** 3).default(256 * 1024 ** 2)),
  /** Built-in video engine output: `mp4` needs ffmpeg with libx264; `auto` picks mp4 when it is there, else `gif`. */
  videoFormat: variable('VIDEO_FORMAT', z.enum(['auto', 'mp4', 'gif'], named('must be auto, mp4 or gif')).default('auto')),
  ffmpegPath: variable('FFMPEG_PATH', z.string().min(1).default('ffmpeg')),
  /** Webhook attempts one dispatcher process sends at once (I/O bound). */
  dispatcherConcurrency: variable('DISPATCHER_CONCURRENCY', wholeNumber(1000).default(20)),
  webhookTimeoutMs: variable('WEBHOOK_TIMEOUT_MS', wholeNumber(120_000).default(10_000)),
  /** Delay before each retry, measured from the previous attempt. */
  webhookRetryDelaysMs: variable(
    'WEBHOOK_RETRY_DELAYS_MS',
    commaList((s) => (/^\d+$/.test(s) ? Number(s) : undefined))
      .transform((delays) => Object.freeze(delays))
      .prefault('60000,300000,1800000,7200000,21600000'),
  ),
  webhookAllowPrivateNetworks: variable('WEBHOOK_ALLOW_PRIVATE_NETWORKS', flag().default(false)),
  admin: {
    user: variable('ADMIN_USER', z.string().min(1).optional()),
    password: variable('ADMIN_PASSWORD', z.string().min(1).optional()),
  },
  /** Credits charged per task kind. */
  taskCosts: perTaskKind((kind) => variable(kind.cost.variable, wholeNumber(1_000_000).default(kind.cost.default))),
  /** Requests allowed per key: an exact sliding minute and a rolling day in hourly buckets. */
  rateLimits: {
    paid: {
      perMinute: variable('RATE_LIMIT_PAID_PER_MINUTE', wholeNumber().default(300)),
      perDay: variable('RATE_LIMIT_PAID_PER_DAY', wholeNumber().default(100_000)),
    },
    trial: {
      perMinute: variable('RATE_LIMIT_TRIAL_PER_MINUTE', wholeNumber().default(20)),
      perDay: variable('RATE_LIMIT_TRIAL_PER_DAY', wholeNumber().default(1000)),
    },
  } satisfies Record<ApiKeyType, unknown>,
  /** Login throttle (services/api/src/domain/login-throttle.ts), in 15-minute windows. */
  login: {
    /** Attempts one client address may make, across e-mails; then 429. */
    maxAttemptsPerIp: variable('LOGIN_MAX_ATTEMPTS_PER_IP', wholeNumber().default(100)),
    /** Failed attempts for one e-mail from one client address (a success clears them); then 429. */
    maxFailuresPerEmailAndIp: variable('LOGIN_MAX_FAILURES_PER_EMAIL_AND_IP', wholeNumber().default(10)),
    /**
     * Cap of the delay before each password check of an e-mail that several addresses are failing
     * for (never a refusal). An attempt waits at most 2 × this (at least 1 s) for its turn from an
     * address that has not failed for the e-mail, 5 × from one that has; then it is checked anyway.
     */
    slowdownMaxMs: variable('LOGIN_SLOWDOWN_MAX_MS', wholeNumber(30_000).default(2_000)),
  },
  databasePoolSize: variable('DATABASE_POOL_SIZE', wholeNumber(500).default(10)),
  /**
   * API: how long an idle keep-alive connection stays open. Longer than the idle timeout of the
   * load balancer in front (60 s for AWS ALB and nginx by default), so the balancer closes first
   * and never sends a request on a connection the API is closing.
   */
  keepAliveTimeoutMs: variable('HTTP_KEEP_ALIVE_TIMEOUT_MS', wholeNumber(3_600_000).default(65_000)),
  shutdownDrainMs: variable('SHUTDOWN_DRAIN_MS', millisecondsFromZero(120_000).optional()),
  devSecretsFile: variable('DEV_SECRETS_FILE', z.string().min(1).default('.dev-secrets.json')),
  telemetry: telemetrySettings,
};

/** The name of every variable the configuration reads (deploy/kubernetes is checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze([...variablesOf(settings)].map((v) => v.name));

/** The variables' values, before `complete`. */
type EnvValues = Parsed<typeof settings>;

/** Rules about more than one variable. */
function checkCombinations(s: EnvValues, ctx: z.core.$RefinementCtx): void {
  const problem = (message: string, about?: { name: string }) => ctx.addIssue({ code: 'custom', message, path: about ? [about.name] : [] });
  if ((s.admin.user === undefined) !== (s.admin.password === undefined)) {
    problem(`${settings.admin.user.name} and ${settings.admin.password.name} must be set together`);
  }
  if (s.nodeEnv === 'production') {
    if (s.trustProxy === true) {
      problem(
        'true is refused when NODE_ENV=production: any client could then pick its own address with a forged X-Forwarded-For; set the number of proxies in front of the API (e.g. 1)',
        settings.trustProxy,
      );
    }
    const missing = [s.jwtSecret ? undefined : settings.jwtSecret.name, s.secretsKey ? undefined : settings.secretsKey.name].filter(Boolean);
    if (missing.length > 0) problem(`${missing.join(', ')}: required when NODE_ENV=production`);
    if (!s.publicBaseUrl) {
      problem('required when NODE_ENV=production (the URL clients reach the API at, e.g. https://tasks.example.com)', settings.publicBaseUrl);
    }
    if (s.benchFifoScheduling) problem('is for npm run bench only and refused when NODE_ENV=production', settings.benchFifoScheduling);
  }
  if (s.redisSentinels && s.redisClusterNodes) {
    problem(`${settings.redisSentinels.name} and ${settings.redisClusterNodes.name} are both set; choose one (a cluster fails over on its own)`);
  }
  if (s.redisSentinels && !s.redisSentinelName) problem(`required when ${settings.redisSentinels.name} is set`, settings.redisSentinelName);
  if (!s.redisSentinels && s.redisSentinelName) problem(`is set but ${settings.redisSentinels.name} is not`, settings.redisSentinelName);
  if (s.storageDriver === 's3' && !s.s3.bucket) problem('required when STORAGE_DRIVER=s3', settings.s3.bucket);
  for (const kind of TASK_KINDS) {
    if (s.engines[kind] === 'cog' && !s.cog[kind].url) problem(`required when ${settings.engines[kind].name}=cog`, settings.cog[kind].url);
  }
}

/** Basic-auth login of the operators' pages (Bull Board). */
export interface AdminCredentials {
  user: string;
  password: string;
  /** Absolute path of the development secrets file when the login was generated there; else undefined. */
  generatedIn: string | undefined;
}

/** Where clients reach us when `PUBLIC_BASE_URL` is not set: this host and port, never a wildcard. */
function derivedBaseUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? 'localhost' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** The fields that depend on more than their own variable. */
function complete(s: EnvValues) {
  const { devSecretsFile, ...config } = s;
  const production = s.nodeEnv === 'production';
  const warnings: string[] = [];
  if (s.trustProxy === true) {
    warnings.push(`${settings.trustProxy.name}=true: any client can choose its address with X-Forwarded-For (refused in production)`);
  }

  let { jwtSecret, secretsKey } = s;
  let admin: AdminCredentials | undefined =
    s.admin.user && s.admin.password ? { user: s.admin.user, password: s.admin.password, generatedIn: undefined } : undefined;
  // Tests (NODE_ENV=test) get no generated login: they must never create or read the developer's
  // secrets file, and a board without a login refuses every request anyway.
  const generateAdmin = !admin && s.nodeEnv === 'development';
  if (!production && (!jwtSecret || !secretsKey || generateAdmin)) {
    const generated = devSecrets(devSecretsFile);
    if (!jwtSecret) {
      jwtSecret = generated.JWT_SECRET;
      warnings.push(`${settings.jwtSecret.name} is not set; using a generated development secret from ${devSecretsFile}`);
    }
    if (!secretsKey) {
      secretsKey = generated.SECRETS_KEY;
      warnings.push(`${settings.secretsKey.name} is not set; using a generated development key from ${devSecretsFile}`);
    }
    if (generateAdmin) admin = { user: generated.ADMIN_USER, password: generated.ADMIN_PASSWORD, generatedIn: path.resolve(devSecretsFile) };
  }
  // Unreachable in production (checked above); narrows the types for the code below.
  if (!jwtSecret || !secretsKey) throw new ConfigError('Invalid configuration:\n  JWT_SECRET, SECRETS_KEY: missing');

  const host = s.host ?? (production ? '0.0.0.0' : '127.0.0.1');
  // Typed `Buffer` (not `Buffer<ArrayBuffer>`): the type consumers of `Config` have always seen.
  const key: Buffer = Buffer.from(secretsKey, 'base64');
  return Object.freeze({
    ...config,
    /** Listen address of the API and the ops servers: `HOST`, else 0.0.0.0 in production and 127.0.0.1 otherwise. */
    host,
    /**
     * Origin (and optional path prefix) clients reach the API at, no trailing slash: builds `Location`,
     * file URLs and the console's same-origin check. `PUBLIC_BASE_URL`, required in production;
     * otherwise derived from `host` and `port` (e.g. `http://127.0.0.1:3000`). Never from a request.
     */
    publicBaseUrl: s.publicBaseUrl ?? derivedBaseUrl(host, s.port),
    /** `CORS_ALLOWED_ORIGINS`: the origins answered with CORS headers on `/api/public/*` (`['*']`: any); empty: none. */
    corsAllowedOrigins: s.corsAllowedOrigins ?? ([] as readonly string[]),
    jwtSecret,
    /** 32-byte AES-256-GCM key for API keys and webhook secrets at rest. */
    secretsKey: key,
    /**
     * Bull Board operator login. `ADMIN_USER`/`ADMIN_PASSWORD`; in development, when unset, generated
     * once and kept in the development secrets file. Unset in production and tests: the board refuses
     * every request.
     */
    admin,
    /** Where model servers post prediction webhooks: `COG_WEBHOOK_BASE_URL`, else the public base URL. */
    cogWebhookBaseUrl: s.cogWebhookBaseUrl ?? s.publicBaseUrl ?? derivedBaseUrl(host, s.port),
    /**
     * API: after SIGTERM, how long `/readyz` answers 503 while requests are still served, so load
     * balancers stop sending before the listener closes. Default 5000 in production, else 0.
     */
    shutdownDrainMs: s.shutdownDrainMs ?? (production ? 5_000 : 0),
    /** Non-fatal remarks made while loading (e.g. generated development secrets); log them at start. */
    warnings: Object.freeze(warnings),
  });
}

const configSchema = envSchema(settings).superRefine(checkCombinations).transform(complete);

/** The parsed, frozen configuration of a process. Built once by `loadConfig`. */
export type Config = z.output<typeof configSchema>;

/** Requests allowed per key: an exact sliding minute and a rolling day in hourly buckets. */
export type RateLimitPolicy = Config['rateLimits'][ApiKeyType];

/**
 * Parses and validates the environment. Throws `ConfigError` naming each bad variable.
 * Call once per process (in `main.ts`) and pass the result down.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseEnv(configSchema, env);
}

/** Only the `OTEL_*` settings: each service reads them first, to start tracing before anything else loads. */
export function loadTelemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  return parseEnv(envSchema(telemetrySettings), env);
}

/**
 * Only `DATABASE_URL`, for tools that need nothing else (the migration step runs before any
 * service secrets exist).
 */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  return parseEnv(envSchema({ databaseUrl: settings.databaseUrl }), env).databaseUrl;
}
