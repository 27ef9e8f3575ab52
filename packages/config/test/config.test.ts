import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, loadDatabaseUrl } from '../src';

const SECRETS = { JWT_SECRET: 'j'.repeat(40), SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') };

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
    expect(c.httpEngine).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('engines and workers per kind', () => {
    const c = loadConfig({
      ...SECRETS,
      WORKER_KINDS: 'face-detection',
      WORKER_CONCURRENCY: '3',
      ENGINE_VIDEO: 'http',
      HTTP_ENGINE_URL: 'http://inference:8000/',
      TASK_TIMEOUT_VIDEO_MS: '600000',
    });
    expect(c.workerKinds).toEqual(['face-detection']);
    expect(c.workerConcurrency).toBe(3);
    expect(c.engines['video-generation']).toBe('http');
    expect(c.httpEngine).toEqual({ url: 'http://inference:8000', token: undefined });
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
    expect(() => loadConfig({ ...SECRETS, WEBHOOK_RETRY_DELAYS_MS: '1000,soon' })).toThrow(/WEBHOOK_RETRY_DELAYS_MS/);
    expect(() => loadConfig({ ...SECRETS, SECRETS_KEY: 'c2hvcnQ=' })).toThrow(/SECRETS_KEY/);
    expect(() => loadConfig({ ...SECRETS, ADMIN_USER: 'ops' })).toThrow(/ADMIN_USER and ADMIN_PASSWORD/);
    expect(() => loadDatabaseUrl({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ ...SECRETS, ENGINE_FACE: 'gpu' })).toThrow(/ENGINE_FACE must be builtin or http/);
    expect(() => loadConfig({ ...SECRETS, VIDEO_FORMAT: 'avi' })).toThrow(/VIDEO_FORMAT must be auto, mp4 or gif/);
    expect(() => loadConfig({ ...SECRETS, OPS_PORT: 'metrics' })).toThrow(/OPS_PORT must be a port number/);
    expect(() => loadConfig({ ...SECRETS, ENGINE_VIDEO: 'http' })).toThrow(/HTTP_ENGINE_URL: required/);
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
});
