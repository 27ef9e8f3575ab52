import { TASK_ERROR_CODES } from '@taskapi/domain';
import { TEST_PASSWORD } from '@taskapi/testing';
import { createApp } from '../src/app';
import { expressPath } from '../src/http/route';
import { OpenApiDocument } from '../src/openapi/document';
import { ROUTES as REGISTRY } from '../src/routes';
import { createKey, seedAccount, startApi, withKey, type TestAccount, type TestApi } from './support/harness';

/** Every operation of the registry, as `METHOD /express/path`. */
const ROUTE_LIST = REGISTRY.map((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}`);

/**
 * Registered but deliberately not in the document: HTML pages, not API — the quickstart and Swagger UI page, its files, and the
 * console pages (static assets are middleware).
 */
const UNDOCUMENTED_ROUTES = [
  'GET /docs',
  'GET /docs/init.js',
  'GET /docs/docs.css',
  'GET /docs/quickstart/:file',
  'GET /app/login',
  'GET /app',
  'GET /app/tasks',
  'GET /app/tasks/:publicId',
  'GET /app/api-keys',
  'GET /app/webhook',
  // Where Cog model servers post prediction updates (docs/models.md): internal, token-authenticated.
  'POST /internal/model-webhooks/:predictionId/:token',
];

const openApiDocument = new OpenApiDocument(REGISTRY).document() as any;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const toOpenApiPath = (expressPath: string) => expressPath.replace(/:(\w+)/g, '{$1}');
const splitRoute = (route: string) => {
  const [method, path] = route.split(' ') as [string, string];
  return { method, path };
};

function documentedRoutes(): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(openApiDocument.paths as Record<string, object>)) {
    for (const method of Object.keys(item)) if (HTTP_METHODS.includes(method)) out.push(`${method.toUpperCase()} ${path}`);
  }
  return out.sort();
}

function operation(route: string): any {
  const { method, path } = splitRoute(route);
  return (openApiDocument.paths as any)[toOpenApiPath(path)]?.[method.toLowerCase()];
}

/** Every value of every `$ref` in the document. */
function collectRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const v of node) collectRefs(v, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') out.push(v as string);
      else collectRefs(v, out);
    }
  }
  return out;
}

function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = openApiDocument;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!node || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

function joinPath(prefix: string, path: string): string {
  const joined = `${prefix}/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}

/** `METHOD /path` of every route in an Express 5 app, walking mounted routers (router 2.x keeps `rawPath`). */
function registeredRoutes(app: any): string[] {
  const out: string[] = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) out.push(`${method.toUpperCase()} ${joinPath(prefix, layer.route.path)}`);
      } else if (Array.isArray(layer.handle?.served)) {
        // The registry's route table (http/mount-routes.ts): one middleware serving every operation.
        out.push(...(layer.handle.served as string[]));
      } else if (Array.isArray(layer.handle?.stack)) {
        if (typeof layer.rawPath !== 'string') throw new Error('router layer without rawPath: Express router internals changed');
        walk(layer.handle.stack, joinPath(prefix, layer.rawPath));
      }
    }
  };
  walk(app.router.stack, '');
  return out.sort();
}

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1', () => {
    expect(openApiDocument.openapi.startsWith('3.1')).toBe(true);
    expect(JSON.parse(JSON.stringify(openApiDocument))).toEqual(openApiDocument);
  });

  it('every $ref resolves to an existing component, and every component is used', () => {
    const refs = collectRefs(openApiDocument);
    expect(refs.length).toBeGreaterThan(0);
    const unresolved = refs.filter((r) => !r.startsWith('#/components/') || resolvePointer(r) === undefined);
    expect(unresolved).toEqual([]);

    const used = new Set(refs);
    const unused: string[] = [];
    for (const [kind, entries] of Object.entries(openApiDocument.components as Record<string, object>)) {
      if (kind === 'securitySchemes') continue;
      for (const name of Object.keys(entries)) if (!used.has(`#/components/${kind}/${name}`)) unused.push(`${kind}/${name}`);
    }
    expect(unused).toEqual([]);
  });

  it('operations are well-formed: unique operationId, declared path parameters, known security schemes', () => {
    const ids = new Set<string>();
    const schemes = Object.keys(openApiDocument.components.securitySchemes ?? {});
    for (const route of documentedRoutes()) {
      const op = operation(route);
      const { path } = splitRoute(route);
      expect(typeof op.operationId).toBe('string');
      expect(ids.has(op.operationId)).toBe(false);
      ids.add(op.operationId);
      expect(Object.keys(op.responses).length).toBeGreaterThan(0);

      const declared = (op.parameters ?? [])
        .map((p: any) => (p.$ref ? resolvePointer(p.$ref) : p) as any)
        .filter((p: any) => p.in === 'path')
        .map((p: any) => p.name)
        .sort();
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      expect({ route, params: declared }).toEqual({ route, params: inPath });

      for (const requirement of op.security as Record<string, unknown>[]) {
        for (const name of Object.keys(requirement)) expect(schemes).toContain(name);
      }
    }
  });

  it('uses the right security scheme for each group of endpoints', () => {
    // A signed file link is its own credential (files[].url).
    const publicRoutes = ['POST /api/auth/login', 'GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /api/openapi.json', 'GET /api/files/:publicId/:name'];
    for (const route of ROUTE_LIST) {
      const { path } = splitRoute(route);
      const schemes = (operation(route).security as Record<string, unknown>[]).flatMap((r) => Object.keys(r)).sort();
      if (path.startsWith('/api/tasks')) expect({ route, schemes }).toEqual({ route, schemes: ['ApiKey'] });
      // A browser's reads of one task: a read token, as a bearer header or (an EventSource) in the query.
      else if (path.startsWith('/api/public/')) expect({ route, schemes }).toEqual({ route, schemes: ['ReadToken', 'ReadTokenQuery'] });
      else if (publicRoutes.includes(route)) expect({ route, schemes }).toEqual({ route, schemes: [] });
      else expect({ route, schemes }).toEqual({ route, schemes: ['Session', 'SessionCookie'] });
    }
  });

  it('documents Prefer: wait and Preference-Applied on reading and creating a task', () => {
    for (const route of ['GET /api/tasks/:publicId', 'POST /api/tasks/image-generation', 'POST /api/tasks/video-generation', 'POST /api/tasks/face-detection']) {
      const op = operation(route);
      const prefer = (op.parameters as Array<{ name: string; in: string; required?: boolean; description: string }>).find((p) => p.in === 'header' && p.name.toLowerCase() === 'prefer');
      expect({ route, required: prefer?.required ?? false, mentions: /wait=N/.test(prefer?.description ?? '') }).toEqual({ route, required: false, mentions: true });
      const success = op.responses[route.startsWith('GET') ? '200' : '201'];
      expect({ route, headers: Object.keys(success.headers ?? {}) }).toEqual({ route, headers: expect.arrayContaining(['Preference-Applied']) });
    }
  });

  it('documents exactly the routes of the registry', () => {
    const listed = ROUTE_LIST.map((r) => {
      const { method, path } = splitRoute(r);
      return `${method} ${toOpenApiPath(path)}`;
    }).sort();
    expect(documentedRoutes()).toEqual(listed);
  });
});

describe('OpenAPI document for integrators', () => {
  /** Every operation, from `paths` and `webhooks`, as `[name, operation]`. */
  const everyOperation = (): Array<[string, any]> =>
    [...Object.entries(openApiDocument.paths as Record<string, any>), ...Object.entries(openApiDocument.webhooks as Record<string, any>)].flatMap(
      ([path, item]) => Object.entries(item as Record<string, any>).filter(([m]) => HTTP_METHODS.includes(m)).map(([m, op]): [string, any] => [`${m.toUpperCase()} ${path}`, op]),
    );

  it('names its server: the deployment serving it, or else the origin it came from', () => {
    expect(openApiDocument.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    expect(new OpenApiDocument(REGISTRY).document('https://tasks.acme.test').servers).toEqual([{ url: 'https://tasks.acme.test', description: 'This deployment.' }]);
  });

  it('has an example for every response with a JSON or text body (2xx and errors)', () => {
    const missing: string[] = [];
    for (const [name, op] of everyOperation()) {
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        const resolved = response.$ref ? (resolvePointer(response.$ref) as any) : response;
        for (const [type, media] of Object.entries((resolved.content ?? {}) as Record<string, any>)) {
          // File bodies (images, videos, whatever a task produced) are bytes: nothing to show.
          if (/json|^text\//.test(type) && media.example === undefined && Object.keys(media.examples ?? {}).length === 0) missing.push(`${name} ${status} ${type}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('every example of a declared response body is a body the route may send', () => {
    for (const route of REGISTRY) {
      for (const [status, spec] of Object.entries(route.responses)) {
        const media = operation(`${route.method.toUpperCase()} ${expressPath(route.path)}`).responses[status].content?.['application/json'];
        if (!spec.schema || !media) continue;
        for (const [name, example] of Object.entries((media.examples ?? {}) as Record<string, { value: unknown }>)) {
          const issues = spec.schema.safeParse(example.value).error?.issues ?? 'ok';
          expect({ route: route.operationId, status, name, issues }).toEqual({ route: route.operationId, status, name, issues: 'ok' });
        }
      }
    }
  });

  it('every tag in use is declared with a description, and every declared tag is used', () => {
    const used = new Set(everyOperation().flatMap(([, op]) => op.tags as string[]));
    const declared = openApiDocument.tags as Array<{ name: string; description?: string }>;
    expect(declared.map((t) => t.name).sort()).toEqual([...used].sort());
    for (const tag of declared) expect({ tag: tag.name, described: (tag.description ?? '').length > 10 }).toEqual({ tag: tag.name, described: true });
  });

  it('lists every task error_code with its meaning', () => {
    const description = openApiDocument.components.schemas.TaskErrorCode.description as string;
    const listed = openApiDocument.components.schemas.TaskErrorCode.anyOf.find((s: any) => s.enum)?.enum;
    expect(listed).toEqual([...TASK_ERROR_CODES]);
    for (const code of TASK_ERROR_CODES) expect({ code, explained: new RegExp(`\`${code}\`: \\S`).test(description) }).toEqual({ code, explained: true });
  });

  it('documents the notification as a webhook, not as a path of the API', () => {
    const hook = openApiDocument.webhooks.taskFinished.post;
    expect(hook.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/WebhookEvent' });
    expect(hook.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(['X-Signature', 'X-Timestamp', 'webhook-id', 'webhook-signature']));
    expect(Object.keys(openApiDocument.paths).filter((p) => /webhook/i.test(p) && !p.startsWith('/api/webhook-'))).toEqual([]);
  });
});

describe('OpenAPI document against the running app', () => {
  let api: TestApi;
  let account: TestAccount;
  let apiKey: string;

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { label: 'openapi' });
    apiKey = (await createKey(api, account, { type: 'paid' })).plaintext;
  });
  afterAll(async () => {
    await api.close();
  });

  const samplePath = (path: string) =>
    path.replace(':publicId', `task_${'A'.repeat(22)}`).replace(':keyId', `key_${'A'.repeat(22)}`).replace(':deliveryId', `whd_${'A'.repeat(22)}`).replace(':name', 'image.png');
  const isGenericNotFound = (res: { status: number; body: any }) => res.status === 404 && res.body?.message === 'Not found.';

  it('the route list is exactly what the app registers', () => {
    const app = createApp(api.deps);
    // Bull Board (operators, basic auth) brings its own routes under /admin/queues; it is not API.
    const routes = registeredRoutes(app).filter((r) => !splitRoute(r).path.startsWith('/admin/queues'));
    expect(routes).toEqual([...ROUTE_LIST, ...UNDOCUMENTED_ROUTES].sort());
  });

  it('serves the document naming this deployment (PUBLIC_BASE_URL) as its server', async () => {
    const res = await api.req('GET', '/api/openapi.json');
    expect(res.body.servers).toEqual([{ url: api.config.publicBaseUrl, description: 'This deployment.' }]);
    expect(res.body.servers[0].url).toBe(api.url);
  });

  it('the generic 404 is what an unknown path gets (so the checks below can tell)', async () => {
    expect(isGenericNotFound(await api.req('GET', '/api/no-such-endpoint'))).toBe(true);
    const underTasks = await api.req('GET', `/api/tasks/task_${'A'.repeat(22)}/nothing`, { headers: withKey(apiKey) });
    expect(isGenericNotFound(underTasks)).toBe(true);
    const underKeys = await api.req('POST', `/api/keys/key_${'A'.repeat(22)}/nothing`, { headers: account.auth });
    expect(isGenericNotFound(underKeys)).toBe(true);
  });

  it.each(ROUTE_LIST)('%s exists: an unauthenticated request gets a documented status, not the generic 404', async (route) => {
    const { method, path } = splitRoute(route);
    const res = await api.req(method, samplePath(path));
    expect(isGenericNotFound(res)).toBe(false);
    expect(Object.keys(operation(route).responses)).toContain(String(res.status));
  });

  it.each(ROUTE_LIST)('%s with credentials gets a documented status, message and body', async (route) => {
    const { method, path } = splitRoute(route);
    let headers: Record<string, string> = {};
    if (path.startsWith('/api/tasks')) headers = withKey(apiKey);
    else if (route === 'POST /api/auth/logout') {
      // A session of its own, so the shared one stays logged in.
      const login = await api.req('POST', '/api/auth/login', { body: { email: account.email, password: TEST_PASSWORD } });
      headers = { authorization: `Bearer ${login.body.token}` };
    } else if (route !== 'POST /api/auth/login' && path.startsWith('/api/') && path !== '/api/openapi.json') headers = account.auth;
    const body = route === 'POST /api/auth/login' ? { email: account.email, password: TEST_PASSWORD } : method === 'POST' ? {} : undefined;

    const res = await api.req(method, samplePath(path), { headers, body });
    expect(isGenericNotFound(res)).toBe(false);
    const documented = operation(route).responses[String(res.status)];
    expect({ route, status: res.status, documented: documented !== undefined }).toEqual({ route, status: res.status, documented: true });
    expect(res.headers.get('x-request-id')).toBeTruthy();

    // Error messages other than validation details are fixed strings: they must be among the documented examples.
    if (res.status >= 401 && res.status !== 429) {
      const resolved: any = documented.$ref ? resolvePointer(documented.$ref) : documented;
      const messages = Object.values(resolved.content['application/json'].examples).map((e: any) => (e.$ref ? (resolvePointer(e.$ref) as any) : e).value.message);
      expect(messages).toContain(res.body.message);
    }
    // The body is what the route declares for that status.
    const declared = REGISTRY.find((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}` === route)?.responses[res.status]?.schema;
    if (declared) expect({ route, parsed: declared.safeParse(res.body).error?.issues ?? 'ok' }).toEqual({ route, parsed: 'ok' });
    if (path.startsWith('/api/tasks')) {
      expect(res.headers.get('ratelimit-policy')).toBeTruthy();
      expect(res.headers.get('ratelimit')).toBeTruthy();
    }
  });
});
