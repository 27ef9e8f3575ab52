import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, loadDatabaseUrl, loadTelemetryConfig } from '../src';

// NODE_ENV=test: development would create or read the development secrets file in the working
// directory; tests of that pass NODE_ENV=development with a file of their own.
const SECRETS = { NODE_ENV: 'test', JWT_SECRET: 'j'.repeat(40), SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') };

describe('configuration', () => {
  it('defaults are the specification\'s values', () => {
    const c = loadConfig({ ...SECRETS });
    expect(c.databaseUrl).toBe('postgresql://postgres@127.0.0.1:5432/taskapi');
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.port).toBe(3000);
    expect(c.rateLimits).toEqual({ paid: { perMinute: 300, perDay: 100_000 }, trial: { perMinute: 20, perDay: 1_000 } });
    expect(c.taskCosts).toEqual({ 'video-generation': 10, 'image-generation': 2, 'face-detection': 1 });
    expect(c.webhookTimeoutMs).toBe(10_000);
    expect(c.webhookRetryDelaysMs).toEqual([60_000, 300_000, 1_800_000, 7_200_000, 21_600_000]);
    expect(c.webhookAllowPrivateNetworks).toBe(false);
    expect(c.workerKinds).toEqual(['video-generation', 'image-generation', 'face-detection']);
    expect(c.engines).toEqual({ 'video-generation': 'builtin', 'image-generation': 'builtin', 'face-detection': 'builtin' });
    // One prediction at a time per model server (Cog's concurrency.max default), unless told.
    expect(c.cog['image-generation']).toEqual({ url: undefined, inputMap: undefined, maxConcurrency: 1 });
    // Model servers post to where clients reach the API, unless told otherwise.
    expect(c.cogWebhookBaseUrl).toBe(c.publicBaseUrl);
    expect(c.cogBusyRetryMs).toBe(2_000);
    // A task waits at most 30 minutes in all on busy or unavailable model servers.
    expect(c.modelBusyTimeoutMs).toBe(1_800_000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('OTLP exports: JSON unless OTEL_EXPORTER_OTLP_PROTOCOL says protobuf; grpc is refused', () => {
    expect(loadTelemetryConfig({}).protocol).toBe('http/json');
    expect(loadTelemetryConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }).protocol).toBe('http/protobuf');
    expect(() => loadTelemetryConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL must be http\/json or http\/protobuf \(grpc is not supported\)/);
  });

  it('PostgreSQL and Redis command spans only when OTEL_NODE_ENABLED_INSTRUMENTATIONS names them; unknown names are refused', () => {
    expect(loadTelemetryConfig({}).enabledInstrumentations).toBeUndefined();
    expect(loadTelemetryConfig({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: '' }).enabledInstrumentations).toBeUndefined();
    expect(loadTelemetryConfig({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg, ioredis' }).enabledInstrumentations).toEqual(['pg', 'ioredis']);
    // The task's own request spans are always on: naming them is allowed and changes nothing.
    expect(loadTelemetryConfig({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,undici,pg' }).enabledInstrumentations).toEqual(['pg']);
    expect(() => loadTelemetryConfig({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg,mongodb' })).toThrow(/OTEL_NODE_ENABLED_INSTRUMENTATIONS.*"mongodb" is not valid/);
  });

  it('engines and workers per kind', () => {
    const c = loadConfig({
      ...SECRETS,
      WORKER_KINDS: 'face-detection',
      WORKER_CONCURRENCY: '3',
      ENGINE_VIDEO: 'cog',
      COG_URL_VIDEO: 'http://video-model:5000/',
      COG_INPUT_MAP_VIDEO: 'duration_seconds=seconds, prompt=text',
      COG_MAX_CONCURRENCY_VIDEO: '4',
      COG_WEBHOOK_BASE_URL: 'http://api.internal:3000/',
      TASK_TIMEOUT_VIDEO_MS: '600000',
    });
    expect(c.workerKinds).toEqual(['face-detection']);
    expect(c.workerConcurrency).toBe(3);
    expect(c.engines['video-generation']).toBe('cog');
    expect(c.cog['video-generation']).toEqual({ url: 'http://video-model:5000', inputMap: { duration_seconds: 'seconds', prompt: 'text' }, maxConcurrency: 4 });
    expect(c.cogWebhookBaseUrl).toBe('http://api.internal:3000');
    expect(c.taskTimeoutsMs['video-generation']).toBe(600_000);
  });

  it('names every bad variable', () => {
    const attempt = () =>
      loadConfig({ ...SECRETS, PORT: 'eighty', RATE_LIMIT_TRIAL_PER_MINUTE: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe', REDIS_URL: 'http://x' });
    expect(attempt).toThrow(/PORT/);
    expect(attempt).toThrow(/RATE_LIMIT_TRIAL_PER_MINUTE/);
    expect(attempt).toThrow(/WEBHOOK_ALLOW_PRIVATE_NETWORKS/);
    expect(attempt).toThrow(/REDIS_URL/);
    expect(() => loadConfig({ ...SECRETS, WORKER_KINDS: 'video-generation,audio' })).toThrow(/WORKER_KINDS: "audio"/);
    expect(() => loadConfig({ ...SECRETS, MODEL_BUSY_TIMEOUT_MS: '999' })).toThrow(/MODEL_BUSY_TIMEOUT_MS must be at least 1000/);
    expect(() => loadConfig({ ...SECRETS, COG_MAX_CONCURRENCY_IMAGE: '0' })).toThrow(/COG_MAX_CONCURRENCY_IMAGE must be at least 1/);
    expect(() => loadConfig({ ...SECRETS, WEBHOOK_RETRY_DELAYS_MS: '1000,soon' })).toThrow(/WEBHOOK_RETRY_DELAYS_MS/);
    expect(() => loadConfig({ ...SECRETS, SECRETS_KEY: 'c2hvcnQ=' })).toThrow(/SECRETS_KEY/);
    expect(() => loadConfig({ ...SECRETS, ADMIN_USER: 'ops' })).toThrow(/ADMIN_USER and ADMIN_PASSWORD/);
    expect(() => loadDatabaseUrl({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ ...SECRETS, ENGINE_FACE: 'gpu' })).toThrow(/ENGINE_FACE must be builtin or cog/);
    expect(() => loadConfig({ ...SECRETS, VIDEO_FORMAT: 'avi' })).toThrow(/VIDEO_FORMAT must be auto, mp4 or gif/);
    expect(() => loadConfig({ ...SECRETS, OPS_PORT: 'metrics' })).toThrow(/OPS_PORT must be a port number/);
    // The bespoke http engine is gone: its variable says what replaces it.
    expect(() => loadConfig({ ...SECRETS, ENGINE_VIDEO: 'http' })).toThrow(/ENGINE_VIDEO http is retired: run the model behind a Cog server, set this to cog and COG_URL_VIDEO/);
    expect(() => loadConfig({ ...SECRETS, ENGINE_IMAGE: 'cog' })).toThrow(/COG_URL_IMAGE: required when ENGINE_IMAGE=cog/);
    expect(() => loadConfig({ ...SECRETS, COG_URL_FACE: 'ftp://x' })).toThrow(/COG_URL_FACE must be an http\(s\) URL/);
    expect(() => loadConfig({ ...SECRETS, COG_INPUT_MAP_VIDEO: 'width=w' })).toThrow(/COG_INPUT_MAP_VIDEO: "width=w" is not valid/);
    expect(() => loadConfig({ ...SECRETS, COG_INPUT_MAP_IMAGE: 'prompt=a,prompt=b' })).toThrow(/COG_INPUT_MAP_IMAGE renames a field twice/);
    expect(() => loadConfig({ ...SECRETS, TASK_TIMEOUT_FACE_MS: '0' })).toThrow(/TASK_TIMEOUT_FACE_MS must be at least 1/);
  });

  it('production refuses to start without secrets; development generates and keeps them', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET, SECRETS_KEY: required when NODE_ENV=production/);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-')), 'secrets.json');
    const first = loadConfig({ DEV_SECRETS_FILE: file });
    const second = loadConfig({ DEV_SECRETS_FILE: file });
    expect(first.warnings).toHaveLength(2);
    expect(first.secretsKey).toHaveLength(32);
    expect(second.jwtSecret).toBe(first.jwtSecret);
    expect(second.secretsKey.equals(first.secretsKey)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('PUBLIC_BASE_URL: required in production, else derived from HOST and PORT', () => {
    expect(() => loadConfig({ ...SECRETS, NODE_ENV: 'production' })).toThrow(/PUBLIC_BASE_URL: required when NODE_ENV=production/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_KEY: required[^]*PUBLIC_BASE_URL: required/);
    const prod = loadConfig({ ...SECRETS, NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://tasks.example.com/' });
    expect(prod.publicBaseUrl).toBe('https://tasks.example.com');
    expect(loadConfig({ ...SECRETS, PUBLIC_BASE_URL: 'https://example.com/taskapi/' }).publicBaseUrl).toBe('https://example.com/taskapi');
    expect(() => loadConfig({ ...SECRETS, PUBLIC_BASE_URL: 'ftp://example.com' })).toThrow(/PUBLIC_BASE_URL must be an http\(s\) URL/);
    expect(() => loadConfig({ ...SECRETS, PUBLIC_BASE_URL: 'https://example.com/?a=1' })).toThrow(/PUBLIC_BASE_URL must have no query/);

    const derived = (env: Record<string, string>) => loadConfig({ ...SECRETS, ...env }).publicBaseUrl;
    expect(derived({})).toBe('http://127.0.0.1:3000');
    expect(derived({ PORT: '8080', HOST: '0.0.0.0' })).toBe('http://127.0.0.1:8080');
    expect(derived({ HOST: '::' })).toBe('http://localhost:3000');
    expect(derived({ HOST: '::1' })).toBe('http://[::1]:3000');
    expect(derived({ HOST: 'api.internal' })).toBe('http://api.internal:3000');
  });

  it('HOST: 127.0.0.1 outside production, 0.0.0.0 in production, or as set', () => {
    expect(loadConfig({ ...SECRETS }).host).toBe('127.0.0.1');
    expect(loadConfig({ ...SECRETS, HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    const prod = { ...SECRETS, NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://tasks.example.com' };
    expect(loadConfig(prod).host).toBe('0.0.0.0');
    expect(loadConfig({ ...prod, HOST: '10.0.0.5' }).host).toBe('10.0.0.5');
  });

  it('CORS_ALLOWED_ORIGINS: none by default, origins or * alone; anything else is refused naming it', () => {
    expect(loadConfig({ ...SECRETS }).corsAllowedOrigins).toEqual([]);
    expect(loadConfig({ ...SECRETS, CORS_ALLOWED_ORIGINS: '' }).corsAllowedOrigins).toEqual([]);
    expect(loadConfig({ ...SECRETS, CORS_ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:5173' }).corsAllowedOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ]);
    expect(loadConfig({ ...SECRETS, CORS_ALLOWED_ORIGINS: '*' }).corsAllowedOrigins).toEqual(['*']);
    for (const bad of ['https://app.example.com/', 'https://app.example.com/page', 'app.example.com', 'ftp://files.example.com', '*,https://a.example', 'https://user@a.example']) {
      expect(() => loadConfig({ ...SECRETS, CORS_ALLOWED_ORIGINS: bad })).toThrow(/CORS_ALLOWED_ORIGINS: ".*" is not an origin/);
    }
  });

  it('TRUST_PROXY: a hop count (default 0); true is refused in production', () => {
    const prod = { ...SECRETS, NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://tasks.example.com' };
    expect(loadConfig({ ...SECRETS }).trustProxy).toBe(0);
    expect(loadConfig({ ...prod }).trustProxy).toBe(0);
    expect(loadConfig({ ...prod, TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ ...prod, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ ...prod, TRUST_PROXY: 'false' }).trustProxy).toBe(0);
    expect(() => loadConfig({ ...prod, TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: true is refused when NODE_ENV=production/);
    for (const bad of ['yes', '-1', '1.5', '100', 'loopback', '10.0.0.0/8']) {
      expect(() => loadConfig({ ...SECRETS, TRUST_PROXY: bad })).toThrow(/TRUST_PROXY must be a hop count/);
    }
    // Outside production (a developer's own proxy) it is allowed, with a warning every service logs.
    const dev = loadConfig({ ...SECRETS, TRUST_PROXY: 'true' });
    expect(dev.trustProxy).toBe(true);
    expect(dev.warnings).toEqual([expect.stringMatching(/^TRUST_PROXY=true: any client can choose its address/)]);
  });

  it('login throttle: defaults and limits', () => {
    expect(loadConfig({ ...SECRETS }).login).toEqual({ maxAttemptsPerIp: 100, maxFailuresPerEmailAndIp: 10, slowdownMaxMs: 2_000 });
    const set = loadConfig({ ...SECRETS, LOGIN_MAX_ATTEMPTS_PER_IP: '50', LOGIN_MAX_FAILURES_PER_EMAIL_AND_IP: '5', LOGIN_SLOWDOWN_MAX_MS: '3000' });
    expect(set.login).toEqual({ maxAttemptsPerIp: 50, maxFailuresPerEmailAndIp: 5, slowdownMaxMs: 3_000 });
    expect(() => loadConfig({ ...SECRETS, LOGIN_MAX_FAILURES_PER_EMAIL_AND_IP: '0' })).toThrow(/LOGIN_MAX_FAILURES_PER_EMAIL_AND_IP must be at least 1/);
    expect(() => loadConfig({ ...SECRETS, LOGIN_SLOWDOWN_MAX_MS: '60000' })).toThrow(/LOGIN_SLOWDOWN_MAX_MS must be at most 30000/);
  });

  it('file store: fs by default; s3 needs a bucket; signed file URLs live an hour by default', () => {
    const defaults = loadConfig({ ...SECRETS });
    expect({ driver: defaults.storageDriver, s3: defaults.s3, ttl: defaults.fileUrlTtlSeconds }).toEqual({
      driver: 'fs',
      s3: { bucket: undefined, region: 'us-east-1', endpoint: undefined, forcePathStyle: false },
      ttl: 3600,
    });
    const s3 = loadConfig({ ...SECRETS, STORAGE_DRIVER: 's3', S3_BUCKET: 'task-files', S3_REGION: 'eu-west-1', S3_ENDPOINT: 'http://minio:9000/', S3_FORCE_PATH_STYLE: 'true', FILE_URL_TTL_SECONDS: '600' });
    expect({ driver: s3.storageDriver, s3: s3.s3, ttl: s3.fileUrlTtlSeconds }).toEqual({
      driver: 's3',
      s3: { bucket: 'task-files', region: 'eu-west-1', endpoint: 'http://minio:9000', forcePathStyle: true },
      ttl: 600,
    });
    expect(() => loadConfig({ ...SECRETS, STORAGE_DRIVER: 's3' })).toThrow(/S3_BUCKET: required when STORAGE_DRIVER=s3/);
    expect(() => loadConfig({ ...SECRETS, STORAGE_DRIVER: 'gcs' })).toThrow(/STORAGE_DRIVER must be fs or s3/);
    expect(() => loadConfig({ ...SECRETS, S3_BUCKET: 'Not_A_Bucket' })).toThrow(/S3_BUCKET must be a bucket name/);
    expect(() => loadConfig({ ...SECRETS, FILE_URL_TTL_SECONDS: '604801' })).toThrow(/FILE_URL_TTL_SECONDS must be at most 604800/);
  });

  it('retention: files are kept 30 days by default; at least one day', () => {
    expect(loadConfig({ ...SECRETS }).retentionDays).toBe(30);
    expect(loadConfig({ ...SECRETS, RETENTION_DAYS: '7' }).retentionDays).toBe(7);
    expect(() => loadConfig({ ...SECRETS, RETENTION_DAYS: '0' })).toThrow(/RETENTION_DAYS must be at least 1/);
    expect(() => loadConfig({ ...SECRETS, RETENTION_DAYS: '1.5' })).toThrow(/RETENTION_DAYS must be a whole number/);
  });

  it('MEMORY_RELEASE_IDLE_MS: 10 s by default; 0 turns the idle memory release off', () => {
    expect(loadConfig({ ...SECRETS }).memoryReleaseIdleMs).toBe(10_000);
    expect(loadConfig({ ...SECRETS, MEMORY_RELEASE_IDLE_MS: '0' }).memoryReleaseIdleMs).toBe(0);
    expect(loadConfig({ ...SECRETS, MEMORY_RELEASE_IDLE_MS: '2500' }).memoryReleaseIdleMs).toBe(2_500);
    expect(() => loadConfig({ ...SECRETS, MEMORY_RELEASE_IDLE_MS: '-1' })).toThrow(/MEMORY_RELEASE_IDLE_MS must be a whole number/);
    expect(() => loadConfig({ ...SECRETS, MEMORY_RELEASE_IDLE_MS: '3600001' })).toThrow(/MEMORY_RELEASE_IDLE_MS must be at most 3600000/);
  });

  it('REDIS_CLUSTER_NODES: unset (REDIS_URL alone) by default; host:port nodes when set', () => {
    expect(loadConfig({ ...SECRETS }).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ ...SECRETS, REDIS_CLUSTER_NODES: '' }).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ ...SECRETS, REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.7:7000,[::1]:7001' }).redisClusterNodes).toEqual([
      { host: 'redis-0.redis', port: 6379 },
      { host: '10.0.0.7', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
    for (const bad of ['redis-0', 'redis://a:6379', 'a:0', 'a:70000', 'a:6379,b']) {
      expect(() => loadConfig({ ...SECRETS, REDIS_CLUSTER_NODES: bad })).toThrow(/REDIS_CLUSTER_NODES/);
    }
  });

  it('REDIS_SENTINELS with REDIS_SENTINEL_NAME: the third way to Redis; never with a cluster; the name required', () => {
    const c = loadConfig({ ...SECRETS, REDIS_SENTINELS: 's1:26379, 10.0.0.8:26380,[::1]:26381', REDIS_SENTINEL_NAME: 'taskapi', REDIS_SENTINEL_PASSWORD: 'sentinel pw' });
    expect(c.redisSentinels).toEqual([
      { host: 's1', port: 26379 },
      { host: '10.0.0.8', port: 26380 },
      { host: '::1', port: 26381 },
    ]);
    expect(c.redisSentinelName).toBe('taskapi');
    expect(c.redisSentinelPassword).toBe('sentinel pw');
    expect(loadConfig({ ...SECRETS }).redisSentinels).toBeUndefined();
    expect(() => loadConfig({ ...SECRETS, REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'taskapi', REDIS_CLUSTER_NODES: 'a:7000' })).toThrow(
      /REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set/,
    );
    expect(() => loadConfig({ ...SECRETS, REDIS_SENTINELS: 's1:26379' })).toThrow(/REDIS_SENTINEL_NAME.*required when REDIS_SENTINELS is set/);
    expect(() => loadConfig({ ...SECRETS, REDIS_SENTINEL_NAME: 'taskapi' })).toThrow(/REDIS_SENTINEL_NAME.*is set but REDIS_SENTINELS is not/);
    for (const bad of ['s1', 'redis://s1:26379', 's1:0']) {
      expect(() => loadConfig({ ...SECRETS, REDIS_SENTINELS: bad, REDIS_SENTINEL_NAME: 'taskapi' })).toThrow(/REDIS_SENTINELS/);
    }
    expect(() => loadConfig({ ...SECRETS, REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'has space' })).toThrow(/REDIS_SENTINEL_NAME/);
  });

  describe('Bull Board login', () => {
    const tmpFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-')), 'secrets.json');

    it('is taken from ADMIN_USER/ADMIN_PASSWORD when set', () => {
      const c = loadConfig({ ...SECRETS, NODE_ENV: 'development', ADMIN_USER: 'ops', ADMIN_PASSWORD: 'pw', DEV_SECRETS_FILE: tmpFile() });
      expect(c.admin).toEqual({ user: 'ops', password: 'pw', generatedIn: undefined });
    });

    it('development generates one, kept in the development secrets file', () => {
      const file = tmpFile();
      const first = loadConfig({ ...SECRETS, NODE_ENV: 'development', DEV_SECRETS_FILE: file });
      expect(first.admin).toMatchObject({ user: 'admin', generatedIn: file });
      expect(first.admin!.password.length).toBeGreaterThanOrEqual(20);
      expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ ADMIN_USER: 'admin', ADMIN_PASSWORD: first.admin!.password });
      expect(loadConfig({ ...SECRETS, NODE_ENV: 'development', DEV_SECRETS_FILE: file }).admin).toEqual(first.admin);
      // None of the warnings (which every service logs) carries the password.
      for (const w of first.warnings) expect(w).not.toContain(first.admin!.password);
    });

    it('a secrets file from before gets a login added, the same in every process, its keys kept', () => {
      const file = tmpFile();
      const old = { JWT_SECRET: 'o'.repeat(64), SECRETS_KEY: Buffer.alloc(32, 9).toString('base64') };
      fs.writeFileSync(file, JSON.stringify(old), { mode: 0o600 });
      const a = loadConfig({ DEV_SECRETS_FILE: file });
      fs.writeFileSync(file, JSON.stringify(old), { mode: 0o600 });
      const b = loadConfig({ DEV_SECRETS_FILE: file });
      expect(a.admin).toEqual(b.admin);
      expect(a.jwtSecret).toBe(old.JWT_SECRET);
      expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ ...old, ADMIN_USER: 'admin', ADMIN_PASSWORD: a.admin!.password });
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    });

    it('production and tests generate none (the board then refuses every request) and never touch the file', () => {
      const file = tmpFile();
      expect(loadConfig({ ...SECRETS, NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://t.example', DEV_SECRETS_FILE: file }).admin).toBeUndefined();
      expect(loadConfig({ ...SECRETS, DEV_SECRETS_FILE: file }).admin).toBeUndefined();
      expect(fs.existsSync(file)).toBe(false);
    });
  });
});
