import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { z } from 'zod';
import { nameServerSpan } from '@taskapi/telemetry';
import type { ApiDeps } from '../deps';
import { ApiError, type FixedCode } from '../errors';
import { downgradeResponse, downgradesResponses, upgradeRequest } from './api-version';
import { keyPrincipal, locals, readTokenPrincipal, sessionPrincipal } from './request-context';
import { expressPath, type Auth, type Reply, type Route } from './route';
import { invalidInput, parseOrThrow, unstorableStrings, type InputPlace } from './validation';

/**
 * Path prefixes whose every request is authenticated before routing: an unknown path below them
 * answers 401 like a known one, so nobody can probe which endpoints exist without credentials.
 * Routes below a prefix must declare the prefix's authentication.
 */
export interface AuthScope {
  prefix: string;
  auth: Exclude<Auth, 'none'>;
}

/** True when a request says it carries a body (a length above zero, or chunked). */
function hasBody(req: Request): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/**
 * JSON body parser for one route (docs/architecture.md, hostile input): a body must be `application/json` in UTF-8, else
 * 415, before a byte of it is parsed; strict bodies also keep their raw text.
 */
function jsonBody(limit: number, strict: boolean): RequestHandler {
  const parse = express.json({
    limit,
    strict: true,
    type: () => true,
    verify: strict
      ? (_req, res, buf) => {
          locals(res as Response).rawBody = buf.toString('utf8');
        }
      : undefined,
  });
  return (req, res, next) => {
    if (!hasBody(req)) {
      next();
      return;
    }
    if (!req.is('application/json')) {
      next(new ApiError('CONTENT_TYPE_NOT_JSON'));
      return;
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.get('content-type') ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8') {
      next(new ApiError('UNSUPPORTED_ENCODING'));
      return;
    }
    parse(req, res, next);
  };
}

function parseInput(schema: z.ZodType | undefined, value: unknown, invalid: FixedCode): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(invalid);
  return result.data;
}

/**
 * What a schema makes of an input that is absent altogether (no query string, none of the declared
 * headers), worked out once: most requests send none, and the answer is the same every time.
 * Frozen, because every such request shares it. Undefined when the schema refuses an empty input.
 */
function parsedWhenAbsent(schema: z.ZodType | undefined): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse({});
  return result.success ? Object.freeze(result.data) : undefined;
}

/** Throws the 400 for text PostgreSQL cannot store (docs/architecture.md, hostile input) when an input holds text PostgreSQL cannot store. */
function refuseUnstorable(value: unknown, place: InputPlace, verbatim?: readonly string[]): void {
  const problems = unstorableStrings(value, verbatim);
  if (problems.length) throw invalidInput(problems, place);
}

/**
 * Writes a JSON reply: what Express's `res.json`/`res.send` would send (no ETag: the app turns
 * them off), without their per-response work (content-type parsing, a Buffer copy of the body).
 */
function send(req: Request, res: Response, reply: Reply): void {
  if ('sent' in reply) return;
  if (reply.headers) for (const name in reply.headers) res.setHeader(name, reply.headers[name] as string);
  let text: string;
  if (downgradesResponses(res)) {
    // An older version asked for: the answer goes through its transforms (never on the newest version's path).
    const json = 'jsonText' in reply ? (JSON.parse(reply.jsonText) as unknown) : reply.json;
    text = JSON.stringify(downgradeResponse(req, res, reply.status, json)) ?? '';
  } else {
    text = 'jsonText' in reply ? reply.jsonText : (JSON.stringify(reply.json) ?? '');
  }
  res.statusCode = reply.status;
  // As Express: a GET or HEAD whose preconditions say the client's copy is current (here only
  // `If-None-Match: *`, since no response has a validator) is answered 304, without a body.
  if (req.fresh) res.statusCode = 304;
  if (res.statusCode === 204 || res.statusCode === 304) {
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** Validates a request against its route's schemas and calls the handler with typed inputs. */
function invoke(route: Route, deps: ApiDeps): RequestHandler {
  const headerNames = route.headers ? Object.keys(route.headers.describe) : [];
  const noHeaders = parsedWhenAbsent(route.headers?.schema);
  const noQuery = parsedWhenAbsent(route.query);
  return async (req: Request, res: Response) => {
    route.guard?.(req, deps);
    const params = parseInput(route.params?.schema, req.params, route.params?.invalid ?? 'NOT_FOUND') as Record<string, unknown> | undefined;
    if (typeof params?.publicId === 'string') locals(res).publicId = params.publicId;
    // A request pinned to an older version is first brought to the newest version's shape.
    const upgraded = locals(res).apiVersion?.transformsRequests ? upgradeRequest(req, res, route.versionedAs ?? route.path, req.query, req.body) : undefined;
    let query: unknown;
    if (route.query) {
      if (upgraded === undefined && noQuery !== undefined && !req.url.includes('?')) {
        query = noQuery;
      } else {
        const sent = upgraded ? upgraded.query : req.query;
        refuseUnstorable(sent, 'query');
        query = parseOrThrow(route.query, sent, 'query');
      }
    }
    let body: unknown;
    if (route.body) {
      const sent: unknown = upgraded ? upgraded.body : req.body;
      if (route.body.strict && sent === undefined) {
        throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a JSON object' } });
      }
      refuseUnstorable(sent, 'body', route.body.verbatim);
      body = parseOrThrow(route.body.schema, sent);
    }
    let headers: unknown;
    if (route.headers) {
      const values: Record<string, string | undefined> = {};
      let any = false;
      for (const name of headerNames) {
        const value = req.get(name);
        values[name] = value;
        if (value !== undefined) any = true;
      }
      headers = !any && noHeaders !== undefined ? noHeaders : parseInput(route.headers.schema, values, route.headers.invalid);
    }
    const principal =
      route.auth === 'apiKey' ? keyPrincipal(res) : route.auth === 'readToken' ? readTokenPrincipal(res) : route.auth === 'session' ? sessionPrincipal(res) : undefined;
    const reply = await route.handler(
      { params, query, headers, body, rawBody: locals(res).rawBody },
      { deps, principal: principal as never, prefetched: locals(res).prefetched, req, res },
    );
    send(req, res, reply);
  };
}

/** Runs handlers in order, Express-style: each calls `next()` to go on, `next(err)` or throws to stop. */
function runChain(chain: readonly RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let i = 0;
  const step = (err?: unknown): void => {
    if (err) {
      done(err);
      return;
    }
    const handler = chain[i++];
    if (!handler) {
      done();
      return;
    }
    try {
      const result: unknown = handler(req, res, step);
      if (result instanceof Promise) result.catch((e: unknown) => step(e ?? new Error('Rejected promise')));
    } catch (e) {
      step(e);
    }
  };
  step();
}

/**
 * Serves every route of the registry from one middleware, routed by `find-my-way` (the router
 * Fastify uses: a radix tree, built once): paths match case-insensitively and with an optional
 * trailing slash, HEAD by the GET route, and path parameters arrive decoded. Then the route's
 * handlers run — authentication, body parser, the validated call. Paths below an authentication
 * scope are authenticated before anything else (a scope's unknown path answers 401 without
 * credentials, like a known one); a path below /api whose percent-encoding is malformed is a 400,
 * as the router finds it (after the scope's authentication); every other path is left to the rest
 * of the app. `authenticate` gives the middleware for each kind of authentication.
 */
export function mountRoutes(
  app: express.Express,
  routes: readonly Route[],
  deps: ApiDeps,
  scopes: readonly AuthScope[],
  authenticate: Record<Exclude<Auth, 'none'>, RequestHandler>,
): void {
  const scopeOf = (path: string) => {
    const lower = path.toLowerCase();
    return scopes.find((s) => lower === s.prefix || lower.startsWith(`${s.prefix}/`));
  };
  const badUrl: RequestHandler = (_req, _res, next) => next(new ApiError('MALFORMED_REQUEST', { status: 400 }));
  const router = FindMyWay<FindMyWay.HTTPVersion.V1>({
    caseSensitive: false,
    ignoreTrailingSlash: true,
    // File names are parameters too; longer than this is no route (404).
    maxParamLength: 1000,
    onBadUrl: () => undefined,
  });
  for (const route of routes) {
    const scope = scopeOf(route.path);
    if (scope && scope.auth !== route.auth) throw new Error(`${route.operationId}: ${route.path} is under ${scope.prefix}, which requires ${scope.auth}`);
    const served: Served = { route, chain: [] };
    if (route.auth !== 'none') served.chain.push(authenticate[route.auth]);
    if (route.body) served.chain.push(jsonBody(route.body.limit, route.body.strict ?? false));
    served.chain.push(invoke(route, deps));
    const methods: HTTPMethod[] = route.method === 'get' ? ['GET', 'HEAD'] : [route.method.toUpperCase() as HTTPMethod];
    router.on(methods, expressPath(route.path), () => undefined, served);
  }

  const dispatch: RequestHandler = (req, res, next) => {
    const found = router.find(req.method as HTTPMethod, req.path);
    const served = found?.store as Served | null | undefined;
    if (served) {
      req.params = found!.params as Record<string, string>;
      locals(res).route = served.route.path;
      locals(res).versionedRoute = served.route.versionedAs ?? served.route.path;
      // The trace's server span gets the same template as the metrics, whatever router served it.
      nameServerSpan(req.method, served.route.path);
      runChain(served.chain, req, res, next);
      return;
    }
    const scope = scopeOf(req.path);
    // `found` without a route: the router could not decode the path. Below /api that is the API's
    // 400; elsewhere (console pages, docs) the rest of the app answers in its own way.
    const rest = found && /^\/api\//i.test(req.path) ? [badUrl] : [];
    if (scope) runChain([authenticate[scope.auth], ...rest], req, res, next);
    else if (rest.length) runChain(rest, req, res, next);
    else next();
  };
  // What it serves, as `METHOD /express/:path`, for the test that compares the app with its document.
  app.use(Object.assign(dispatch, { served: routes.map((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}`) }));
}

/** What the router holds for a route: the route, and the handlers that serve it, in order. */
interface Served {
  route: Route;
  chain: RequestHandler[];
}
