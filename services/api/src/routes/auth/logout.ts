import { SESSION_COOKIE } from '../../http/session-auth';
import { defineRoute } from '../../http/route';
import { sessionCookieOptions } from './login';

/** `POST /api/auth/logout`: ends the session everywhere and clears the cookie. */
export const logoutRoute = defineRoute({
  operationId: 'logout',
  method: 'post',
  path: '/api/auth/logout',
  tag: 'Console session',
  summary: 'Log out',
  description: 'Revokes the session token (on every replica, until it would have expired) and clears the `session` cookie.',
  auth: 'session',
  responses: { 204: { description: 'Logged out.', headers: ['Set-Cookie-Cleared'] } },
  async handler(_input, { deps, principal, req, res }) {
    await deps.sessions.revoke(principal);
    res.clearCookie(SESSION_COOKIE, sessionCookieOptions(req, deps.config.nodeEnv === 'production'));
    res.status(204).end();
    return { sent: true };
  },
});
