import type { Request, RequestHandler } from 'express';
import { ApiError, unavailable } from '../errors';
import { locals } from './request-context';
import type { SessionService } from '../domain/sessions';
import type { AccountRepository } from '../repositories/accounts';
import type { ApiVersions } from '../versions/registry';
import { adoptAccountVersion } from './api-version';

export const SESSION_COOKIE = 'session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The value of one cookie from the Cookie header. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * True when a browser says the request comes from our own pages: `Sec-Fetch-Site` when sent,
 * otherwise `Origin` must equal the origin of `publicBaseUrl` (the configured one, never the
 * request's Host header, which the caller chooses). Neither header: not a browser we can trust.
 */
export function isSameOrigin(req: Request, publicBaseUrl: string): boolean {
  const site = req.get('sec-fetch-site');
  if (site) return site === 'same-origin' || site === 'none';
  const origin = req.get('origin');
  if (!origin) return false;
  return origin === new URL(publicBaseUrl).origin;
}

/**
 * Console authentication: `Authorization: Bearer <jwt>` or the `session` cookie. Requests carrying
 * `X-Api-Key` are refused outright. Cookie-authenticated state changes must be same-origin.
 */
export function sessionAuth(deps: {
  sessions: SessionService;
  accounts: Pick<AccountRepository, 'sessionAccount'>;
  publicBaseUrl: string;
  apiVersions: ApiVersions;
}): RequestHandler {
  return async (req, res, next) => {
    if (req.get('x-api-key') !== undefined) throw new ApiError('SESSION_ONLY');
    const authorization = req.get('authorization');
    let token: string | undefined;
    let viaCookie = false;
    if (authorization !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!m) throw new ApiError('LOGIN_REQUIRED');
      token = m[1];
    } else {
      token = readCookie(req, SESSION_COOKIE);
      viaCookie = token !== undefined;
    }
    if (!token || token.length > 4096) throw new ApiError('LOGIN_REQUIRED');

    let session;
    try {
      session = await deps.sessions.verify(token);
    } catch (err) {
      throw unavailable('redis', err);
    }
    if (!session) throw new ApiError('LOGIN_REQUIRED');
    const account = await deps.accounts.sessionAccount(session.accountId);
    if (account === null) throw new ApiError('LOGIN_REQUIRED');
    adoptAccountVersion(res, deps.apiVersions, account.apiVersion);

    if (viaCookie && !SAFE_METHODS.has(req.method) && !isSameOrigin(req, deps.publicBaseUrl)) {
      throw new ApiError('CROSS_SITE_REFUSED');
    }
    locals(res).session = { ...session, email: account.email, apiVersion: account.apiVersion, viaCookie };
    next();
  };
}
