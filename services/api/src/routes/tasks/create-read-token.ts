import { ApiError } from '../../errors';
import { defineRoute } from '../../http/route';
import { READ_TOKEN_TTL, readTokenRequestSchema, readTokenSchema } from '../../schemas/read-tokens';
import { taskParams } from './task-params';

/** `POST /api/tasks/{publicId}/read-token`: a short-lived token a web page reads this one task with. */
export const createReadTokenRoute = defineRoute({
  operationId: 'createReadToken',
  method: 'post',
  path: '/api/tasks/{publicId}/read-token',
  tag: 'Tasks',
  summary: 'Mint a read token for a web page',
  description:
    "A token that reads this one task — its JSON, its event stream and its files under `/api/public/tasks/{publicId}` — for " +
    `\`ttl_seconds\` (${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}, default ${READ_TOKEN_TTL.default}), so a browser can follow a task without the API key. ` +
    "Mint it on your server and hand it to the page. It carries no secret of the account, dies with this key's revocation, and " +
    "the page's reads count against this key's rate limits. A trial key's token ends with its grant at the latest.",
  auth: 'apiKey',
  params: taskParams,
  body: { schema: readTokenRequestSchema, limit: 1024, example: { ttl_seconds: 900 } },
  responses: { 201: { description: 'The token and when it expires.', schema: readTokenSchema } },
  invalidExamples: [['A lifetime out of range', 'ttl_seconds', `must be an integer from ${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}`]],
  async handler({ params, body }, { deps, principal, prefetched }) {
    const task = await deps.taskReader.read(principal, params.publicId, prefetched);
    if (!task) throw new ApiError('TASK_NOT_FOUND');
    let expiresMs = Date.now() + (body?.ttl_seconds ?? READ_TOKEN_TTL.default) * 1000;
    // A trial key stops working when its grant ends: so does what it minted.
    if (principal.type === 'trial') {
      const key = await deps.verifier.lookupById(principal.keyId);
      if (key?.grantExpiresAt !== null && key?.grantExpiresAt !== undefined) expiresMs = Math.min(expiresMs, key.grantExpiresAt);
    }
    const expiresAt = Math.floor(expiresMs / 1000);
    const token = deps.readTokens.seal({ keyId: principal.keyId, publicId: params.publicId, expiresAt });
    return { status: 201, json: { token, expires_at: new Date(expiresAt * 1000).toISOString() } };
  },
});
