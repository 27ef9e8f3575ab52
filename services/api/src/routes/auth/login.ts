import type { CookieOptions, Request } from 'express';
import { ApiError } from '../../errors';
import { checkLogin } from '../../domain/login';
import { SESSION_TTL_SECONDS } from '../../domain/sessions';
import { adoptAccountVersion } from '../../http/api-version';
import { locals } from '../../http/request-context';
import { defineRoute } from '../../http/route';
import { SESSION_COOKIE, isSameOrigin } from '../../http/session-auth';
import { loginRequestSchema, loginResponseSchema } from '../../schemas/console';

/** Options of the `session` cookie; `Secure` in production or over HTTPS. */
export function sessionCookieOptions(req: Request, production: boolean): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', secure: production || req.secure, path: '/' };
}

/** API instances already told that `X-Forwarded-For` arrives while `TRUST_PROXY` is 0 (once each). */
const warnedAboutForwarding = new WeakSet<object>();

/** `POST /api/auth/login`: a session as a JSON token and an HttpOnly cookie. */
export const loginRoute = defineRoute({
  operationId: 'login',
  method: 'post',
  path: '/api/auth/login',
  tag: 'Console session',
  summary: 'Log in to the console',
  description:
    'Checks e-mail and password and starts a 12-hour session: the token in the body and the same JWT as the `session` ' +
    'cookie. Throttled in 15-minute windows: too many attempts from one client address, or too many failures for one ' +
    'e-mail from one address, answer 429 with `Retry-After`. When several addresses fail for one e-mail, its attempts ' +
    'take turns and are slowed (up to a few seconds each), but the right password is never refused. Refuses requests ' +
    'carrying `X-Api-Key`, and browser posts from other sites.',
  auth: 'none',
  body: { schema: loginRequestSchema, limit: 16 * 1024, example: { email: 'dev@example.com', password: 'correct horse battery staple' } },
  responses: { 200: { description: 'Logged in.', schema: loginResponseSchema, headers: ['Set-Cookie-Session'] } },
  errors: ['SESSION_ONLY', 'CROSS_SITE_REFUSED', 'INVALID_CREDENTIALS', 'TOO_MANY_LOGIN_ATTEMPTS', 'INTERNAL', 'SERVICE_UNAVAILABLE'],
  invalidExamples: [['email missing', 'email', 'is required']],
  guard(req, deps) {
    if (req.get('x-api-key') !== undefined) throw new ApiError('SESSION_ONLY');
    // Browsers always announce where a form post comes from; refuse logins planted by other sites.
    if ((req.get('origin') || req.get('sec-fetch-site')) && !isSameOrigin(req, deps.config.publicBaseUrl)) throw new ApiError('CROSS_SITE_REFUSED');
  },
  async handler({ body }, { deps, req, res }) {
    const { config, repos, redis, sessions } = deps;
    if (config.trustProxy === 0 && req.get('x-forwarded-for') !== undefined && !warnedAboutForwarding.has(deps)) {
      // Behind a proxy that is not trusted, every client has the proxy's address: they would all
      // share one per-address login limit.
      warnedAboutForwarding.add(deps);
      deps.logger.warn('X-Forwarded-For received while TRUST_PROXY=0: the login limits count every client behind a proxy as one address; set TRUST_PROXY to the number of proxy hops');
    }
    const { accountId, apiVersion } = await checkLogin({ accounts: repos.accounts, redis, limits: config.login }, body.email, body.password, req.ip ?? 'unknown');
    const session = sessions.issue(accountId);
    locals(res).session = { accountId, email: body.email, tokenId: session.tokenId, expiresAt: session.expiresAt.getTime(), apiVersion, viaCookie: false };
    // The answer belongs to the account now logged in.
    adoptAccountVersion(res, deps.apiVersions, apiVersion);
    res.cookie(SESSION_COOKIE, session.token, { ...sessionCookieOptions(req, config.nodeEnv === 'production'), maxAge: SESSION_TTL_SECONDS * 1000 });
    return { status: 200, json: { token: session.token, expires_at: session.expiresAt.toISOString() } };
  },
});
