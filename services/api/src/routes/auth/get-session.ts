import { defineRoute } from '../../http/route';
import { sessionSchema } from '../../schemas/console';

/** `GET /api/auth/session`: who is logged in, until when. */
export const getSessionRoute = defineRoute({
  operationId: 'getSession',
  method: 'get',
  path: '/api/auth/session',
  tag: 'Console session',
  summary: 'The current session',
  description: "Who is logged in, until when, and the API version the account's requests get when they send no `TaskApi-Version`.",
  auth: 'session',
  responses: { 200: { description: 'The logged-in account.', schema: sessionSchema } },
  handler(_input, { principal }) {
    return { status: 200, json: { account_id: principal.accountId, email: principal.email, api_version: principal.apiVersion, expires_at: new Date(principal.expiresAt).toISOString() } };
  },
});
