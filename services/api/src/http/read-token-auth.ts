import type { Request, RequestHandler } from 'express';
import type { ReadTokens } from '@taskapi/crypto';
import { ApiError } from '../errors';
import { keyAdmission, type KeyAuthDeps } from './api-key-auth';
import { locals } from './request-context';

/**
 * The token of a request: `Authorization: Bearer <token>`, else `?access_token=` (an EventSource
 * sends no headers). Another scheme in `Authorization` (a proxy's Basic credentials) or an empty
 * one is no read token: the query is read then.
 */
function tokenOf(req: Request): string | null | undefined {
  const header = req.get('authorization')?.trim();
  if (header && /^Bearer(?:[ \t]|$)/i.test(header)) {
    const m = /^Bearer[ \t]+(\S+)$/i.exec(header);
    return m ? m[1]! : null;
  }
  const query = req.query.access_token;
  if (query === undefined) return undefined;
  return typeof query === 'string' && query.length > 0 ? query : null;
}

/**
 * Authenticates a browser read token on `/api/public/*` (docs/api.md, "Browser read tokens"):
 * missing → 401 `Read token required.`; not one of ours (forged, altered, malformed) → `Invalid read
 * token.` with nothing looked up; expired → `This read token has expired.`; its key unknown or
 * revoked (the rate-limit script's revocation marker too, at the very next request) → `Invalid read
 * token.`. Then the key's rate limits, as a request with the key. Sets `res.locals.key` (the minting
 * key), `res.locals.readTaskId` (the one task the token reads) and `res.locals.readTokenEndsAt`
 * (when it stops reading: an event stream it opened ends then).
 */
export function readTokenAuth(deps: KeyAuthDeps & { readTokens: ReadTokens }): RequestHandler {
  const { verifier, readTokens } = deps;
  const admit = keyAdmission(deps);
  return async (req, res, next) => {
    const token = tokenOf(req);
    if (token === undefined) throw new ApiError('READ_TOKEN_REQUIRED');
    const claim = token === null ? null : readTokens.open(token);
    if (!claim) throw new ApiError('INVALID_READ_TOKEN');
    if (claim.expiresAt * 1000 <= Date.now()) throw new ApiError('READ_TOKEN_EXPIRED');
    const key = await verifier.lookupById(claim.keyId);
    if (!key || key.revoked) throw new ApiError('INVALID_READ_TOKEN');
    // A trial key's token ends with its grant (capped when minted; a grant ended early too).
    if (key.type === 'trial' && (key.grantExpiresAt === null || key.grantExpiresAt <= Date.now())) throw new ApiError('READ_TOKEN_EXPIRED');
    const endsAt = key.type === 'trial' ? Math.min(claim.expiresAt * 1000, key.grantExpiresAt!) : claim.expiresAt * 1000;
    // The route reads the task as the key's own route would (the same prefetch of its marker).
    const readPath = (req.baseUrl + req.path).replace(/^\/api\/public\/tasks\//i, '/api/tasks/');
    await admit(req, res, key, readPath, () => {
      verifier.evictById(key.id);
      return new ApiError('INVALID_READ_TOKEN');
    });
    locals(res).readTaskId = claim.publicId;
    locals(res).readTokenEndsAt = endsAt;
    next();
  };
}
