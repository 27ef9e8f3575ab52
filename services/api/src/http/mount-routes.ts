import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { keyPrincipal, locals, sessionPrincipal } from './request-context';
import { expressPath, type Auth, type Reply, type Route } from './route';
import { parseOrThrow } from './validation';

/**
 * Path prefixes whose every request is authenticated before routing: an unknown path below them
 * answers 401 like a known one, so nobody can probe which endpoints exist without credentials.
 * Routes below a prefix must declare the prefix's authentication.
 */
export interface AuthScope {
  prefix: string;
  auth: Exclude<Auth, 'none'>;
}

/** JSON body parser for one route: the limit, and for strict bodies the content type and raw text. */
function jsonBody(limit: number, strict: boolean): RequestHandler {
  if (!strict) return express.json({ limit });
  const parse = express.json({
    limit,
    strict: true,
    verify: (_req, res, buf, encoding) => {
      locals(res as Response).rawBody = buf.toString((encoding || 'utf8') as BufferEncoding);
    },
  });
  return (req, res, next) => {
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    if (hasBody && !req.is('application/json')) {
      next(new ApiError('CONTENT_TYPE_NOT_JSON'));
      return;
    }
    parse(req, res, next);
  };
}

function parseInput(schema: z.ZodType | undefined, value: unknown, invalid: ApiError['code']): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(invalid as 'NOT_FOUND');
  return result.data;
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
    const query = route.query ? parseOrThrow(route.query, req.query, 'Query') : undefined;
    let body: unknown;
    if (route.body) {
      if (route.body.strict && req.body === undefined) {
        throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a JSON object' } });
      }
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
