import { defineRoute } from '../../http/route';
import { sessionSchema } from '../../schemas/console';

/** `GET /api/auth/session`: who is logged in, until when. */
export const getSessionRoute = defineRoute({
  operationId: 'getSession',
  method: 'get',
  path: '/api/auth/session',
  tag: 'Console session',
  summary: 'The current session',
  auth: 'session',
  responses: { 200: { description: 'The logged-in account.', schema: sessionSchema } },
  handler(_input, { principal }) {
    return { status: 200, json: { account_id: principal.accountId, email: principal.email, expires_at: new Date(principal.expiresAt).toISOString() } };
  },
});
