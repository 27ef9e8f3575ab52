import jwt from 'jsonwebtoken';
import type { RedisClient } from '@taskapi/service';
import { z } from 'zod';
import { isId, newId } from '@taskapi/ids';

/** Console sessions last 12 hours (docs/api.md). */
export const SESSION_TTL_SECONDS = 12 * 3600;
const ISSUER = 'task-api';
const AUDIENCE = 'task-api-console';

export interface SessionToken {
  token: string;
  tokenId: string;
  accountId: string;
  expiresAt: Date;
}

export interface VerifiedSession {
  accountId: string;
  tokenId: string;
  expiresAt: number;
}

/** Leeway for clocks of replicas that disagree a little. */
const CLOCK_SKEW_SECONDS = 60;

/**
 * The claims a session is honoured with (docs/architecture.md, hostile input). A token signed with our secret could still
 * carry claims of the wrong shape (an older release, a test tool, a leaked secret being probed):
 * ids of our own format and times that make sense, or no session at all.
 */
const sessionClaims = z.object({
  sub: z.string().refine((v) => isId('account', v)),
  jti: z.string().refine((v) => isId('session', v)),
  iat: z.number().int().refine((v) => v <= Date.now() / 1000 + CLOCK_SKEW_SECONDS),
  exp: z.number().int().refine((v) => v <= Date.now() / 1000 + SESSION_TTL_SECONDS + CLOCK_SKEW_SECONDS),
});

function revokedKey(tokenId: string): string {
  return `taskapi:session:revoked:${tokenId}`;
}

/** Issues, verifies and revokes HS256 session JWTs (algorithm pinned on verification). */
export class SessionService {
  constructor(
    private readonly secret: string,
    private readonly redis: RedisClient,
  ) {}

  issue(accountId: string): SessionToken {
    const tokenId = newId('session');
    const token = jwt.sign({}, this.secret, {
      algorithm: 'HS256',
      subject: accountId,
      jwtid: tokenId,
      issuer: ISSUER,
      audience: AUDIENCE,
      expiresIn: SESSION_TTL_SECONDS,
    });
    const { exp } = jwt.decode(token) as { exp: number };
    return { token, tokenId, accountId, expiresAt: new Date(exp * 1000) };
  }

  /** The session in `token`, or null when it is malformed, forged, expired or logged out. */
  async verify(token: string): Promise<VerifiedSession | null> {
    let decoded: unknown;
    try {
      // Also refuses an `exp` in the past and a `nbf` in the future.
      decoded = jwt.verify(token, this.secret, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
    } catch {
      return null;
    }
    const parsed = sessionClaims.safeParse(decoded);
    if (!parsed.success) return null;
    const claims = parsed.data;
    if (await this.redis.exists(revokedKey(claims.jti))) return null;
    return { accountId: claims.sub, tokenId: claims.jti, expiresAt: claims.exp * 1000 };
  }

  /** Logs a session out everywhere until it would have expired anyway. */
  async revoke(session: VerifiedSession): Promise<void> {
    const ttl = Math.ceil((session.expiresAt - Date.now()) / 1000);
    if (ttl > 0) await this.redis.set(revokedKey(session.tokenId), '1', 'EX', ttl);
  }
}
