import type { Request, RequestHandler, Response } from 'express';
import { parseApiKey } from '@taskapi/crypto';
import type { Config } from '@taskapi/config';
import { ApiError } from '../errors';
import { locals } from './request-context';
import type { KeyRecord } from '../domain/key-cache';
import type { ApiKeyVerifier } from '../domain/verify-api-key';
import { policyHeader, rateLimitHeader, type RateLimiter } from '../domain/rate-limit';
import type { ApiMetrics } from '../infra/metrics';
import type { TaskReader } from '../domain/read-task';
import type { ApiVersions } from '../versions/registry';
import { adoptAccountVersion } from './api-version';

export interface KeyAuthDeps {
  config: Config;
  verifier: ApiKeyVerifier;
  rateLimiter: RateLimiter;
  metrics: ApiMetrics;
  taskReader: TaskReader;
  apiVersions: ApiVersions;
}

/**
 * What follows a key's verification, for a request by `X-Api-Key` or by a read token the key
 * minted: the account's pinned version, the key type's rate limits (one Redis round trip, which also
 * reads what the route's read path wants and the key's revocation marker) and the principal.
 * `readPath` is the `/api/tasks/…` path whose read the route serves (a read token's route reads as
 * the key's would). A key revoked on another replica a moment ago throws `revoked`.
 */
export function keyAdmission(deps: KeyAuthDeps) {
  const { config, rateLimiter, metrics, taskReader, apiVersions } = deps;
  const policies = { paid: policyHeader(config.rateLimits.paid), trial: policyHeader(config.rateLimits.trial) };
  return async (req: Request, res: Response, key: KeyRecord, readPath: string, revoked: () => ApiError): Promise<void> => {
    // From here the answer belongs to the key's account: its pinned version, unless the request chose one.
    adoptAccountVersion(res, apiVersions, key.apiVersion);
    const policy = config.rateLimits[key.type];
    // Whatever the read path wants from Redis comes back with the rate limit, in one round trip.
    const prefetchKeys = taskReader.prefetchKeys(req.method, readPath, key.accountId);
    const outcome = await rateLimiter.consume(key.accountId, key.id, policy, prefetchKeys);
    if (outcome.kind === 'revoked') throw revoked();
    res.setHeader('RateLimit-Policy', policies[key.type]);
    if (outcome.kind === 'limited') {
      metrics.rateLimited.inc({ key_type: key.type, window: outcome.window });
      res.setHeader('RateLimit', `"${outcome.window}";r=0;t=${outcome.retryAfter}`);
      throw new ApiError('RATE_LIMITED', { fields: { limit: outcome.limit, window: outcome.window, retry_after: outcome.retryAfter } });
    }
    res.setHeader('RateLimit', rateLimitHeader(outcome.state));
    const ctx = locals(res);
    ctx.prefetched = outcome.prefetched;
    ctx.rateLimitTicket = outcome.ticket;
    ctx.key = {
      keyId: key.id,
      accountId: key.accountId,
      type: key.type,
      grantId: key.grantId,
      keyPrefix: key.keyPrefix,
      apiVersion: key.apiVersion,
    };
    deps.verifier.touch(key.id);
  };
}

/**
 * Authenticates `X-Api-Key` and applies the key type's rate limits, in the order the spec gives:
 * missing → invalid/revoked → expired trial → rate limit. Sets `res.locals.key`.
 */
export function apiKeyAuth(deps: KeyAuthDeps): RequestHandler {
  const { verifier } = deps;
  const admit = keyAdmission(deps);
  return async (req, res, next) => {
    const value = req.get('x-api-key')?.trim();
    if (!value) throw new ApiError('API_KEY_REQUIRED');
    const parsed = parseApiKey(value);
    if (!parsed) throw new ApiError('INVALID_API_KEY');
    const key = await verifier.lookup(parsed.hash);
    if (!key || key.revoked || key.type !== parsed.type) throw new ApiError('INVALID_API_KEY');
    if (key.type === 'trial' && (key.grantExpiresAt === null || key.grantExpiresAt <= Date.now())) {
      adoptAccountVersion(res, deps.apiVersions, key.apiVersion);
      const prefixes = await verifier.activeTrialPrefixes(key.accountId, key.id);
      throw new ApiError('TRIAL_KEY_EXPIRED', { fields: { active_key_prefixes: prefixes } });
    }
    await admit(req, res, key, req.baseUrl + req.path, () => {
      // Revoked on another replica a moment ago; its pub/sub message has not arrived here yet.
      verifier.evict(parsed.hash);
      return new ApiError('INVALID_API_KEY');
    });
    next();
  };
}
