import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import type { ApiDeps } from '../deps';
import { ApiError, type FixedCode } from '../errors';
import { keyPrincipal, locals, sessionPrincipal } from './request-context';
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
 * JSON body parser for one route (DESIGN §13): a body must be `application/json` in UTF-8, else
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

/** Throws the 400 of DESIGN §13 when an input holds text PostgreSQL cannot store. */
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
  const text = 'jsonText' in reply ? reply.jsonText : (JSON.stringify(reply.json) ?? '');
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
    let query: unknown;
    if (route.query) {
      if (noQuery !== undefined && !req.url.includes('?')) {
        query = noQuery;
      } else {
        refuseUnstorable(req.query, 'query');
        query = parseOrThrow(route.query, req.query, 'query');
      }
    }
    let body: unknown;
    if (route.body) {
      if (route.body.strict && req.body === undefined) {
        throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a JSON object' } });
      }
      refuseUnstorable(req.body, 'body', route.body.verbatim);
      body = parseOrThrow(route.body.schema, req.body);
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
    const principal = route.auth === 'apiKey' ? keyPrincipal(res) : route.auth === 'session' ? sessionPrincipal(res) : undefined;
    const reply = await route.handler(
      { params, query, headers, body, rawBody: locals(res).rawBody },
      { deps, principal: principal as never, prefetched: locals(res).prefetched, req, res },
    );
    send(req, res, reply);
  };
}

/** A path parameter as Express decodes it; undecodable → 400 (Express: "Failed to decode param"). */
function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch (err) {
    if (err instanceof URIError) throw new ApiError('MALFORMED_REQUEST', { status: 400 });
    throw err;
  }
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&');

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  paramNames: string[];
  /** What runs for a request of this route, in order. */
  chain: RequestHandler[];
}

/**
 * `/api/tasks/{publicId}` → a regular expression with one group per parameter, matching as
 * Express's router does: case-insensitively, one segment per parameter, an optional trailing slash.
 */
function compilePath(path: string): { pattern: RegExp; paramNames: string[] } {
  const paramNames: string[] = [];
  const source = path
    .split(/(\{\w+\})/)
    .map((part) => {
      const param = /^\{(\w+)\}$/.exec(part);
      if (!param) return escapeRegExp(part);
      paramNames.push(param[1] as string);
      return '([^/]+)';
    })
    .join('');
  return { pattern: new RegExp(`^${source}/?$`, 'i'), paramNames };
}

/** Number of segments of a path, a trailing slash ignored: `/api/tasks/` and `/api/tasks` have 2. */
function segmentCount(path: string): number {
  let n = 0;
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  for (let i = 0; i < end; i++) if (path.charCodeAt(i) === 47) n++;
  return n;
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
 * Serves every route of the registry from one middleware: the request's method and path select its
 * route from a table compiled once (per method, by number of segments, in registry order), and the
 * route's handlers run directly — authentication, body parser, the validated call. Express's router
 * would walk a layer per route and middleware and match each against the path; on the hot routes
 * that walk cost more than the rest of the request. Paths below an authentication scope that no
 * route matches are authenticated, then left to the rest of the app (404); every other path is too.
 * `authenticate` gives the middleware for each kind of authentication.
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
  const table = new Map<string, Map<number, CompiledRoute[]>>();
  for (const route of routes) {
    const scope = scopeOf(route.path);
    if (scope && scope.auth !== route.auth) throw new Error(`${route.operationId}: ${route.path} is under ${scope.prefix}, which requires ${scope.auth}`);
    const { pattern, paramNames } = compilePath(route.path);
    // The table put the parameters as matched (still encoded) in `req.params`.
    const decode: RequestHandler = (req, _res, next) => {
      for (const name of paramNames) req.params[name] = decodeParam(req.params[name] as string);
      next();
    };
    const chain: RequestHandler[] = [];
    // As Express did: a scope authenticates before its routes are matched (so before a parameter is
    // decoded); a route outside any scope has its parameters decoded when matched, before its own
    // authentication.
    if (route.auth !== 'none') chain.push(authenticate[route.auth]);
    if (paramNames.length) chain.splice(scope ? chain.length : 0, 0, decode);
    if (route.body) chain.push(jsonBody(route.body.limit, route.body.strict ?? false));
    chain.push(invoke(route, deps));

    const method = route.method.toUpperCase();
    const byLength = table.get(method) ?? new Map<number, CompiledRoute[]>();
    table.set(method, byLength);
    const segments = segmentCount(route.path);
    byLength.set(segments, [...(byLength.get(segments) ?? []), { route, pattern, paramNames, chain }]);
  }

  const dispatch: RequestHandler = (req, res, next) => {
    const path = req.path;
    // Express answers HEAD with the GET route (Node leaves the body out).
    const candidates = table.get(req.method === 'HEAD' ? 'GET' : req.method)?.get(segmentCount(path));
    for (const c of candidates ?? []) {
      const match = c.pattern.exec(path);
      if (!match) continue;
      const params: Record<string, string> = {};
      c.paramNames.forEach((name, i) => {
        params[name] = match[i + 1] as string;
      });
      req.params = params;
      locals(res).route = c.route.path;
      runChain(c.chain, req, res, next);
      return;
    }
    const scope = scopeOf(path);
    if (scope) runChain([authenticate[scope.auth]], req, res, next);
    else next();
  };
  // What it serves, as `METHOD /express/:path`, for the test that compares the app with its document.
  app.use(Object.assign(dispatch, { served: routes.map((r) => `${r.method.toUpperCase()} ${expressPath(r.path)}`) }));
}
