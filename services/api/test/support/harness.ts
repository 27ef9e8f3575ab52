import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@taskapi/config';
import { createLogger } from '@taskapi/logger';
import { request, testConfig, testPasswordHash, TEST_PASSWORD, uniqueEmail, type RequestOptions, type TestResponse } from '@taskapi/testing';
import { createApp } from '../../src/app';
import { createApiDeps, type ApiDeps, type ApiDepsOptions } from '../../src/deps';
import { addCredits, createAccount, grantTrial } from '../../src/domain/accounts';

/** A real API instance on an ephemeral port, with its own connections and caches. */
export interface TestApi {
  url: string;
  config: Config;
  deps: ApiDeps;
  req<T = any>(method: string, path: string, opts?: RequestOptions): Promise<TestResponse<T>>;
  close(): Promise<void>;
}

/**
 * Starts the API on an ephemeral port of 127.0.0.1. The port is known before the configuration is
 * loaded, so `HOST`/`PORT` describe the real listener and the derived `publicBaseUrl` is `url`
 * (unless `overrides` sets `PUBLIC_BASE_URL`). `deps` shortens timings or limits that are not
 * configuration (event stream keep-alives, held-request limits).
 */
export async function startApi(
  overrides: Record<string, string> = {},
  opts: { logStream?: NodeJS.WritableStream; egressCa?: string; deps?: Pick<ApiDepsOptions, 'heldRequests' | 'taskEventTimings' | 'apiVersions'> } = {},
): Promise<TestApi> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  let config: Config;
  let deps: ApiDeps;
  try {
    config = testConfig({ HOST: '127.0.0.1', PORT: String(port), ...overrides });
    const logger = createLogger({ service: 'api-test', level: config.logLevel, stream: opts.logStream });
    deps = await createApiDeps(config, logger, { ...opts.deps, egressTls: opts.egressCa ? { ca: opts.egressCa } : undefined });
  } catch (err) {
    server.close();
    throw err;
  }
  server.on('request', createApp(deps));
  return {
    url,
    config,
    deps,
    req: (method, path, opts) => request(url, method, path, opts),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await deps.close();
    },
  };
}

export interface TestAccount {
  id: string;
  email: string;
  password: string;
  /** Bearer token of a fresh console session. */
  token: string;
  /** Headers for session requests. */
  auth: Record<string, string>;
}

/** An account created the way the operator CLI does, logged in through the real login endpoint. */
export async function seedAccount(api: TestApi, opts: { credits?: number; label?: string } = {}): Promise<TestAccount> {
  const email = uniqueEmail(opts.label);
  const created = await createAccount(api.deps.repos, api.config.secretsKey, {
    email,
    passwordHash: await testPasswordHash(),
    credits: opts.credits ?? 0,
  });
  const login = await api.req('POST', '/api/auth/login', { body: { email, password: TEST_PASSWORD } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  const token = login.body.token as string;
  return { id: created.account_id, email, password: TEST_PASSWORD, token, auth: { authorization: `Bearer ${token}` } };
}

export async function topUp(api: TestApi, account: TestAccount, amount: number): Promise<void> {
  await addCredits(api.deps.repos, account.email, amount);
}

/** A trial grant on the account; `expiresInMs` may be negative (the row is then aged in place). */
export async function seedGrant(api: TestApi, account: TestAccount, quota: number, expiresInMs = 7 * 86_400_000): Promise<string> {
  const { grant_id } = await grantTrial(api.deps.repos, account.email, quota, new Date(Date.now() + Math.max(expiresInMs, 60_000)));
  if (expiresInMs < 60_000) await expireGrant(api, grant_id, expiresInMs);
  return grant_id;
}

/** Moves a grant's expiry (tests of expiry cannot wait for the clock). */
export async function expireGrant(api: TestApi, grantId: string, expiresInMs = -1000): Promise<void> {
  await api.deps.db.prisma.trialGrant.update({ where: { id: grantId }, data: { expiresAt: new Date(Date.now() + expiresInMs) } });
}

export interface CreatedKey {
  id: string;
  plaintext: string;
  prefix: string;
}

/** Creates a key through the console API. */
export async function createKey(
  api: TestApi,
  account: TestAccount,
  body: ({ type: 'paid' } | { type: 'trial'; grant_id: string }) & { spend_limit?: { credits: number; period: 'day' | 'month' } | null },
): Promise<CreatedKey> {
  const res = await api.req('POST', '/api/keys', { headers: account.auth, body });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return { id: res.body.key.id, plaintext: res.body.plaintext_key, prefix: res.body.key.key_prefix };
}

/** Headers for key-authenticated requests. */
export function withKey(key: CreatedKey | string): Record<string, string> {
  return { 'x-api-key': typeof key === 'string' ? key : key.plaintext };
}
