import express, { Router, type Request, type RequestHandler, type Response } from 'express';
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
  return Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
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

/** Throws the 400 of DESIGN §13 when an input holds text PostgreSQL cannot store. */
function refuseUnstorable(value: unknown, place: InputPlace, verbatim?: readonly string[]): void {
  const problems = unstorableStrings(value, verbatim);
  if (problems.length) throw invalidInput(problems, place);
}

function send(res: Response, reply: Reply): void {
  if ('sent' in reply) return;
  if (reply.headers) for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  if ('jsonText' in reply) res.status(reply.status).type('application/json').send(reply.jsonText);
  else res.status(reply.status).json(reply.json);
}

/** Validates a request against its route's schemas and calls the handler with typed inputs. */
function invoke(route: Route, deps: ApiDeps): RequestHandler {
  const headerNames = route.headers ? Object.keys(route.headers.describe) : [];
  return async (req: Request, res: Response) => {
    route.guard?.(req, deps);
    const params = parseInput(route.params?.schema, req.params, route.params?.invalid ?? 'NOT_FOUND') as Record<string, unknown> | undefined;
    if (typeof params?.publicId === 'string') locals(res).publicId = params.publicId;
    let query: unknown;
    if (route.query) {
      refuseUnstorable(req.query, 'query');
      query = parseOrThrow(route.query, req.query, 'query');
    }
    let body: unknown;
    if (route.body) {
      if (route.body.strict && req.body === undefined) {
        throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a JSON object' } });
      }
      refuseUnstorable(req.body, 'body', route.body.verbatim);
      body = parseOrThrow(route.body.schema, req.body);
    }
    const headers = route.headers
      ? parseInput(route.headers.schema, Object.fromEntries(headerNames.map((h) => [h, req.get(h)])), route.headers.invalid)
      : undefined;
    const principal = route.auth === 'apiKey' ? keyPrincipal(res) : route.auth === 'session' ? sessionPrincipal(res) : undefined;
    const reply = await route.handler(
      { params, query, headers, body, rawBody: locals(res).rawBody },
      { deps, principal: principal as never, prefetched: locals(res).prefetched, req, res },
    );
    send(res, reply);
  };
}

/**
 * Registers every route on `app`, in registry order, with its authentication and body parser.
 * `authenticate` gives the middleware for each kind of authentication.
 */
export function mountRoutes(
  app: express.Express,
  routes: readonly Route[],
  deps: ApiDeps,
  scopes: readonly AuthScope[],
  authenticate: Record<Exclude<Auth, 'none'>, RequestHandler>,
): void {
  const scoped = new Map<string, Router>();
  const scopeOf = (path: string) => scopes.find((s) => path === s.prefix || path.startsWith(`${s.prefix}/`));
  for (const route of routes) {
    const scope = scopeOf(route.path);
    if (scope && scope.auth !== route.auth) throw new Error(`${route.operationId}: ${route.path} is under ${scope.prefix}, which requires ${scope.auth}`);
    const chain: RequestHandler[] = [];
    if (!scope && route.auth !== 'none') chain.push(authenticate[route.auth]);
    if (route.body) chain.push(jsonBody(route.body.limit, route.body.strict ?? false));
    chain.push(invoke(route, deps));

    if (!scope) {
      app[route.method](expressPath(route.path), ...chain);
      continue;
    }
    let router = scoped.get(scope.prefix);
    if (!router) {
      router = Router();
      router.use(authenticate[scope.auth]);
      scoped.set(scope.prefix, router);
      app.use(scope.prefix, router);
    }
    router[route.method](expressPath(route.path.slice(scope.prefix.length)) || '/', ...chain);
  }
}
