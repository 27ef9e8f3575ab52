// Console endpoints: login session (`/api/auth/*`), API keys, trial grants, credits, webhook secret (DESIGN §3–5).
import { BASE_HEADERS, NO_SECURITY, SESSION_SECURITY, errorResponse, header, headers, json, parameter, response, schema, type OpenApiObject } from './refs';
import { sessionErrors } from './responses';

const ok = (description: string, schemaName: string): OpenApiObject => ({
  description,
  headers: headers(...BASE_HEADERS),
  content: json(schema(schemaName)),
});

const keyIdParams = [parameter('KeyId')];

export const consolePaths: Record<string, OpenApiObject> = {
  '/api/auth/login': {
    post: {
      tags: ['Console session'],
      operationId: 'login',
      summary: 'Log in to the console',
      description:
        'Returns a session JWT (12 hours) and sets it as the HttpOnly, SameSite=Strict `session` cookie. Use it as ' +
        '`Authorization: Bearer <token>` or through the cookie. Attempts are throttled per client IP (all attempts) and per ' +
        'e-mail (failures), in 15-minute windows. A request carrying `X-Api-Key` is refused; a browser request (`Origin` or ' +
        '`Sec-Fetch-Site` present) must be same-origin.',
      security: NO_SECURITY,
      requestBody: { required: true, content: json(schema('LoginRequest')) },
      responses: {
        '200': {
          description: 'Logged in.',
          headers: { ...headers(...BASE_HEADERS), 'Set-Cookie': header('Set-Cookie-Session') },
          content: json(schema('LoginResponse')),
        },
        '400': {
          description: 'The body is not a JSON object with `email` and `password` strings (a body that is not `application/json` is not read).',
          headers: headers(...BASE_HEADERS),
          content: json({ anyOf: [schema('ValidationError'), schema('Error')] }, ['BodyNotObject', 'LoginEmailMissing', 'UnknownField', 'MalformedJson']),
        },
        '401': errorResponse('Wrong e-mail or password, or the request carries `X-Api-Key`.', 'Error', ['InvalidCredentials', 'SessionOnly']),
        '403': errorResponse('A browser request from another origin.', 'Error', ['CrossSiteRefused']),
        '413': response('ConsoleBodyTooLarge'),
        '415': response('ConsoleUnsupportedMediaType'),
        '429': errorResponse('Too many attempts from this IP, or too many failures for this e-mail.', 'LoginRateLimited', ['TooManyLoginAttempts'], [
          ...BASE_HEADERS,
          'Retry-After',
        ]),
        '500': response('InternalError'),
        '503': response('ServiceUnavailable'),
      },
    },
  },
  '/api/auth/logout': {
    post: {
      tags: ['Console session'],
      operationId: 'logout',
      summary: 'Log out',
      description: 'Revokes this session token on every replica (until it would have expired) and clears the cookie.',
      security: SESSION_SECURITY,
      responses: {
        '204': { description: 'Logged out.', headers: { ...headers(...BASE_HEADERS), 'Set-Cookie': header('Set-Cookie-Cleared') } },
        ...sessionErrors('post'),
      },
    },
  },
  '/api/auth/session': {
    get: {
      tags: ['Console session'],
      operationId: 'getSession',
      summary: 'The current session',
      security: SESSION_SECURITY,
      responses: { '200': ok('Who is logged in, until when.', 'Session'), ...sessionErrors('get') },
    },
  },
  '/api/keys': {
    get: {
      tags: ['API keys'],
      operationId: 'listApiKeys',
      summary: 'List API keys',
      description: 'Every key of the account, newest first, with its status. Never the plaintext.',
      security: SESSION_SECURITY,
      parameters: [parameter('KeyTypeFilter')],
      responses: {
        '200': ok('The keys.', 'ApiKeyList'),
        '400': errorResponse('An invalid or unknown query parameter.', 'ValidationError', ['InvalidKeyTypeParam', 'UnknownParam']),
        ...sessionErrors('get'),
      },
    },
    post: {
      tags: ['API keys'],
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description:
        'A paid key, or a trial key bound to a trial grant that is unexpired, has quota left, and has no unrevoked key. The ' +
        'plaintext is in this response; later only through `reveal`.',
      security: SESSION_SECURITY,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: schema('CreateApiKeyRequest'), examples: { paid: { value: { type: 'paid' } }, trial: { value: { type: 'trial', grant_id: 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6' } } } } },
      },
      responses: {
        '201': ok('The new key and its plaintext.', 'CreatedApiKey'),
        '400': {
          description: 'The body is invalid.',
          headers: headers(...BASE_HEADERS),
          content: json({ anyOf: [schema('ValidationError'), schema('Error')] }, ['InvalidKeyType', 'GrantIdRequired', 'GrantIdMalformed', 'UnknownField', 'MalformedJson']),
        },
        '404': errorResponse('The trial grant does not exist for this account.', 'Error', ['GrantNotFound']),
        '409': errorResponse('The trial grant already has an unrevoked key.', 'Error', ['GrantAlreadyBound']),
        '413': response('ConsoleBodyTooLarge'),
        '415': response('ConsoleUnsupportedMediaType'),
        '422': errorResponse('The trial grant has expired or has no quota left.', 'Error', ['GrantExpired', 'GrantExhausted']),
        ...sessionErrors('post'),
      },
    },
  },
  '/api/keys/{keyId}/revoke': {
    post: {
      tags: ['API keys'],
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description:
        'The very next request with the key, on any API replica, gets 401 `Invalid API key.` Revoking a revoked key returns it ' +
        'unchanged. No request body.',
      security: SESSION_SECURITY,
      parameters: keyIdParams,
      responses: {
        '200': ok('The key, now revoked.', 'ApiKey'),
        '400': response('MalformedRequest'),
        '404': response('KeyNotFound'),
        ...sessionErrors('post'),
      },
    },
  },
  '/api/keys/{keyId}/reissue': {
    post: {
      tags: ['API keys'],
      operationId: 'reissueApiKey',
      summary: 'Reissue an API key',
      description:
        'Revokes the key and creates a new one of the same type (and trial grant) in one transaction. The trial grant must be ' +
        'unexpired with quota left. No request body.',
      security: SESSION_SECURITY,
      parameters: keyIdParams,
      responses: {
        '201': ok('The new key with its plaintext, and the replaced (revoked) key.', 'ReissuedApiKey'),
        '400': response('MalformedRequest'),
        '404': errorResponse("No such key (or the key's grant is gone).", 'Error', ['KeyNotFound', 'GrantNotFound']),
        '409': errorResponse('The key is already revoked (or, in a race, its grant got another active key).', 'Error', ['KeyRevokedNoReissue', 'GrantAlreadyBound']),
        '422': errorResponse("The key's trial grant has expired or has no quota left.", 'Error', ['GrantExpired', 'GrantExhausted']),
        ...sessionErrors('post'),
      },
    },
  },
  '/api/keys/{keyId}/reveal': {
    post: {
      tags: ['API keys'],
      operationId: 'revealApiKey',
      summary: "Show an active key's plaintext",
      description: 'Each reveal is written to an audit log (time, IP, user agent) before the key is returned. No request body.',
      security: SESSION_SECURITY,
      parameters: keyIdParams,
      responses: {
        '200': ok('The plaintext key.', 'RevealedApiKey'),
        '400': response('MalformedRequest'),
        '404': response('KeyNotFound'),
        '409': errorResponse('The key is revoked or its trial grant has expired.', 'Error', ['KeyNotActive']),
        ...sessionErrors('post'),
      },
    },
  },
  '/api/trial-grants': {
    get: {
      tags: ['Account'],
      operationId: 'listTrialGrants',
      summary: 'List trial grants',
      description: 'Trial grants are created by the operator. Newest first, with quota, expiry and the bound key.',
      security: SESSION_SECURITY,
      responses: { '200': ok('The grants.', 'TrialGrantList'), ...sessionErrors('get') },
    },
  },
  '/api/credits/balance': {
    get: {
      tags: ['Account'],
      operationId: 'getCreditBalance',
      summary: 'Credit balance',
      description: 'The paid balance and every trial grant with its remaining quota and expiry. Refuses `X-Api-Key`.',
      security: SESSION_SECURITY,
      responses: { '200': ok('Balances.', 'CreditBalance'), ...sessionErrors('get') },
    },
  },
  '/api/webhook-secret': {
    get: {
      tags: ['Account'],
      operationId: 'getWebhookSecret',
      summary: 'Show the webhook secret',
      security: SESSION_SECURITY,
      responses: { '200': ok('The current secret.', 'WebhookSecret'), ...sessionErrors('get') },
    },
  },
  '/api/webhook-deliveries': {
    get: {
      tags: ['Webhook deliveries'],
      operationId: 'listWebhookDeliveries',
      summary: 'Webhook delivery log',
      description:
        'Deliveries of the account (one per completed or failed task with a `callback_url`), newest first, each with every ' +
        'attempt: time, HTTP status, duration, error and the start of the response.',
      security: SESSION_SECURITY,
      parameters: [parameter('DeliveryTaskFilter'), parameter('Limit')],
      responses: {
        '200': ok('The deliveries.', 'WebhookDeliveryList'),
        '400': errorResponse('A bad query parameter.', 'ValidationError', ['InvalidLimitParam']),
        ...sessionErrors('get'),
      },
    },
  },
  '/api/webhook-deliveries/{deliveryId}/resend': {
    post: {
      tags: ['Webhook deliveries'],
      operationId: 'resendWebhookDelivery',
      summary: 'Send a delivery again',
      description:
        'Sends a succeeded or given-up delivery once more, now, signed with the current secret. It is one more attempt of the ' +
        'same series: `webhook-id` stays the same so receivers can de-duplicate. If it fails and the retry schedule has retries ' +
        'left after that attempt number, they follow. A delivery that is still pending is refused (409). No request body.',
      security: SESSION_SECURITY,
      parameters: [parameter('DeliveryId')],
      responses: {
        '202': ok('Queued for sending; the delivery is pending again.', 'ResentWebhookDelivery'),
        '404': errorResponse('No such delivery for this account.', 'Error', ['DeliveryNotFound']),
        '409': errorResponse('The delivery is still pending.', 'Error', ['DeliveryPending']),
        ...sessionErrors('post'),
      },
    },
  },
  '/api/webhook-secret/rotate': {
    post: {
      tags: ['Account'],
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the webhook secret',
      description: 'Replaces the secret. The old one is invalid at once (no overlap): every webhook sent from now on, including retries, is signed with the new one. No request body.',
      security: SESSION_SECURITY,
      responses: { '200': ok('The new secret.', 'WebhookSecret'), ...sessionErrors('post') },
    },
  },
};
