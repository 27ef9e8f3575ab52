import express, { Router, type CookieOptions, type Request } from 'express';
import { z } from 'zod';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { locals, sessionPrincipal } from '../http/request-context';
import { SESSION_COOKIE, isSameOrigin, sessionAuth } from '../http/session-auth';
import { parseOrThrow } from '../http/validation';
import { checkLogin } from '../domain/login';
import { SESSION_TTL_SECONDS } from '../domain/sessions';

const loginSchema = z.strictObject(
  {
    email: z.string({ error: 'must be a string' }).min(1, { error: 'is required' }).max(254, { error: 'is too long' }),
    password: z.string({ error: 'must be a string' }).min(1, { error: 'is required' }).max(1024, { error: 'is too long' }),
  },
  { error: 'must be a JSON object' },
);

function cookieOptions(req: Request, production: boolean): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', secure: production || req.secure, path: '/' };
}

/** `/api/auth`: login (JSON token + HttpOnly cookie), logout, and who-am-I. */
export function authRoutes(deps: ApiDeps): Router {
  const { config, db, redis, sessions } = deps;
  const router = Router();
  const production = config.nodeEnv === 'production';

  router.post('/login', express.json({ limit: '16kb' }), async (req, res) => {
    if (req.get('x-api-key') !== undefined) throw new ApiError('SESSION_ONLY');
    // Browsers always announce where a form post comes from; refuse logins planted by other sites.
    if ((req.get('origin') || req.get('sec-fetch-site')) && !isSameOrigin(req, config.publicBaseUrl)) {
      throw new ApiError('CROSS_SITE_REFUSED');
    }
    const body = parseOrThrow(loginSchema, req.body ?? undefined);
    const { accountId } = await checkLogin({ prisma: db.prisma, redis, limits: config.login }, body.email, body.password, req.ip ?? 'unknown');
    const session = sessions.issue(accountId);
    locals(res).session = { accountId, email: body.email, tokenId: session.tokenId, expiresAt: session.expiresAt.getTime(), viaCookie: false };
    res.cookie(SESSION_COOKIE, session.token, { ...cookieOptions(req, production), maxAge: SESSION_TTL_SECONDS * 1000 });
    res.status(200).json({ token: session.token, expires_at: session.expiresAt.toISOString() });
  });

  const requireSession = sessionAuth({ sessions, prisma: db.prisma, publicBaseUrl: config.publicBaseUrl });

  router.post('/logout', requireSession, async (req, res) => {
    await sessions.revoke(sessionPrincipal(res));
    res.clearCookie(SESSION_COOKIE, cookieOptions(req, production));
    res.status(204).end();
  });

  router.get('/session', requireSession, (_req, res) => {
    const s = sessionPrincipal(res);
    res.json({ account_id: s.accountId, email: s.email, expires_at: new Date(s.expiresAt).toISOString() });
  });

  return router;
}
