import jwt from 'jsonwebtoken';
import type { Redis } from 'ioredis';
import { newId } from '@taskapi/ids';

/** Console sessions last 12 hours (DESIGN §3). */
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

function revokedKey(tokenId: string): string {
  return `taskapi:session:revoked:${tokenId}`;
}

/** Issues, verifies and revokes HS256 session JWTs (algorithm pinned on verification). */
export class SessionService {
  constructor(
    private readonly secret: string,
    private readonly redis: Redis,
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
    let claims: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(token, this.secret, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
      if (typeof decoded === 'string') return null;
      claims = decoded;
    } catch {
      return null;
    }
    if (!claims.sub || !claims.jti || !claims.exp) return null;
    if (await this.redis.exists(revokedKey(claims.jti))) return null;
    return { accountId: claims.sub, tokenId: claims.jti, expiresAt: claims.exp * 1000 };
  }

  /** Logs a session out everywhere until it would have expired anyway. */
  async revoke(session: VerifiedSession): Promise<void> {
    const ttl = Math.ceil((session.expiresAt - Date.now()) / 1000);
    if (ttl > 0) await this.redis.set(revokedKey(session.tokenId), '1', 'EX', ttl);
  }
}
