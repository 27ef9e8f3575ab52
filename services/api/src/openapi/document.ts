/** The OpenAPI 3.1 document, generated from the route registry (see build-document.ts). */
import type { Route } from '../http/route';
import { buildDocument } from './build-document';
import { webhooks } from './webhooks';
import { NEWEST_VERSION, SHIPPED_VERSIONS } from '../versions/registry';

const DESCRIPTION = `An asynchronous task platform: create video generation, image generation and face detection tasks,
follow them by polling or by a signed webhook, and download their files.

**Task API** (\`/api/tasks*\`): send your API key as \`X-Api-Key\`. Paid keys (\`sk-live-...\`) draw on the account's paid
balance; trial keys (\`sk-test-...\`) on their trial grant. Every request that passes authentication counts against the
key's rate limits (paid 300/minute and 100000/day, trial 20/minute and 1000/day) and its response carries
\`RateLimit-Policy\` and \`RateLimit\`; a 429 adds \`Retry-After\`.

**Console** (\`/api/auth/*\`, \`/api/keys*\`, \`/api/trial-grants\`, \`/api/credits/balance\`, \`/api/usage\`, \`/api/webhook-secret*\`, \`/api/console/tasks*\`): log in with
\`POST /api/auth/login\`, then send \`Authorization: Bearer <token>\` or the \`session\` cookie. These endpoints refuse any
request carrying \`X-Api-Key\`.

**Errors** are JSON with a \`message\` (some add fields, see the schemas). A path that matches no endpoint gives
404 \`{"message":"Not found."}\`. Every response carries \`X-Request-Id\`.

**Versions**: this document describes version \`${NEWEST_VERSION}\`. Send \`TaskApi-Version: YYYY-MM-DD\` to choose a version;
without it a request gets the version pinned to its account when the account was created. Every /api answer names the
version that shaped it in its \`TaskApi-Version\` header.

**Task status**: \`0\` queued, \`10\` processing, \`20\` completed, \`30\` failed (credits refunded, \`error_code\` and \`error_message\` set),
\`40\` cancelled (credits refunded, no webhook).`;

/** The server a document names when no deployment is given (tests, tools): wherever the document was fetched from. */
const SAME_ORIGIN = '/';

/** The terms, on the /docs page (routes/docs.ts). */
const LICENSE_PATH = '/docs#license';

function build(routes: readonly Route[]) {
  const document = buildDocument(routes, {
    // `version` is the API version this document describes: the newest (docs/api.md, "Versions").
    info: { title: 'Task API', version: NEWEST_VERSION, 'x-api-versions': SHIPPED_VERSIONS.map((v) => v.version), description: DESCRIPTION, license: { name: 'Proprietary; the quickstart scripts are MIT-licensed sample code', url: LICENSE_PATH } },
    tags: [
      { name: 'Tasks', description: 'Create, list, get and cancel tasks; download their files. API key.' },
      {
        name: 'Public task reads',
        description: "One task's JSON, event stream and files for a web page, with a read token its server minted (`POST /api/tasks/{publicId}/read-token`); CORS for `CORS_ALLOWED_ORIGINS`.",
      },
      { name: 'Console session', description: 'Log in and out of the console.' },
      { name: 'API keys', description: 'Manage API keys. Login session.' },
      { name: 'Account', description: 'Credits, usage, trial grants and the webhook secret. Login session.' },
      { name: 'Console tasks', description: "The account's tasks and their files, for the console pages. Login session." },
      { name: 'Webhook deliveries', description: 'The delivery log with every attempt, and manual resend. Login session.' },
      { name: 'Operations', description: 'Health, readiness, metrics and this document. No authentication.' },
      { name: 'Webhooks', description: 'What the service sends to `callback_url`.' },
    ],
    securitySchemes: {
      ApiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'X-Api-Key',
        description: 'An API key from the console: `sk-live-` (paid) or `sk-test-` (trial) followed by at least 32 base62 characters.',
      },
      Session: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The `token` from `POST /api/auth/login` (HS256 JWT, valid 12 hours or until logout).',
      },
      ReadToken: {
        type: 'http',
        scheme: 'bearer',
        description:
          'A read token (`trt_…`) from `POST /api/tasks/{publicId}/read-token`: reads that one task until it expires or its minting key is revoked; ' +
          "the minting key's rate limits apply.",
      },
      ReadTokenQuery: {
        type: 'apiKey',
        in: 'query',
        name: 'access_token',
        description: 'The same read token as the `access_token` query parameter, for an `EventSource` (which cannot send headers). Never logged.',
      },
      SessionCookie: {
        type: 'apiKey',
        in: 'cookie',
        name: 'session',
        description:
          'The HttpOnly `session` cookie set by `POST /api/auth/login` (same JWT). State-changing requests authenticated by the ' +
          'cookie must be same-origin (`Sec-Fetch-Site` or `Origin`), else 403. Used when no `Authorization` header is sent.',
      },
    },
    extra: (toJson) => ({ webhooks: webhooks(toJson) }),
  });
  return document;
}

/** The document of one route registry, built once on first use, per deployment it names. */
export class OpenApiDocument {
  private built: Record<string, unknown> | undefined;
  private readonly jsonByServer = new Map<string, string>();

  constructor(private readonly routes: readonly Route[]) {}

  /**
   * The document naming `serverUrl` (the deployment's `PUBLIC_BASE_URL`) in `servers`, or without
   * one the origin it is served from.
   */
  document(serverUrl?: string): Record<string, unknown> {
    this.built ??= build(this.routes);
    const { openapi, info, ...rest } = this.built as { openapi: string; info: { license: { url: string } } };
    if (!serverUrl) return { openapi, info, servers: [{ url: SAME_ORIGIN, description: 'The server this document is served from.' }], ...rest };
    return {
      openapi,
      info: { ...info, license: { ...info.license, url: `${serverUrl}${LICENSE_PATH}` } },
      servers: [{ url: serverUrl, description: 'This deployment.' }],
      ...rest,
    };
  }

  /** The document as served by `GET /api/openapi.json` of the deployment at `serverUrl`. */
  json(serverUrl?: string): string {
    const key = serverUrl ?? SAME_ORIGIN;
    let json = this.jsonByServer.get(key);
    if (json === undefined) {
      json = JSON.stringify(this.document(serverUrl));
      this.jsonByServer.set(key, json);
    }
    return json;
  }
}
