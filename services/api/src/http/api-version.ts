// The version layer at the edge (docs/api.md, "Versions"): which version shapes a request, named in
// every /api answer's `TaskApi-Version`, and the dated transforms applied to requests on the way in
// and to JSON answers on the way out. The version is the request's `TaskApi-Version` when it sends
// one (checked before authentication), else its account's pinned version once authentication knows
// the account, else (no account: refusals before authentication, public routes) the newest.
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../errors';
import type { ApiVersions, ResolvedVersion } from '../versions/registry';
import { isVersionDate } from '../versions/registry';
import { locals } from './request-context';

/** The request and response header. */
export const API_VERSION_HEADER = 'TaskApi-Version';

const API_PATH = /^\/api\//i;

/**
 * Resolves the version of every /api request before anything else runs on it: a `TaskApi-Version`
 * that is malformed or names no version answers 400 at once (so before authentication). Sets the
 * response header to the version in force so far.
 */
export function apiVersionLayer(versions: ApiVersions): RequestHandler {
  const known = versions.names.join(', ');
  return (req, res, next) => {
    if (!API_PATH.test(req.path)) {
      next();
      return;
    }
    const sent = req.headers['taskapi-version'];
    let version = versions.latest;
    if (sent !== undefined) {
      const name = (Array.isArray(sent) ? sent.join(', ') : sent).trim();
      const found = versions.resolve(name);
      if (!found) {
        res.setHeader(API_VERSION_HEADER, versions.latest.name);
        const problem = isVersionDate(name) ? `is not a version of this API; the versions are ${known}` : 'must be a date (YYYY-MM-DD) naming a version of this API, such as ' + versions.latest.name;
        next(new ApiError('INVALID_API_VERSION', { params: { problem } }));
        return;
      }
      version = found;
      locals(res).apiVersionSent = true;
    }
    locals(res).apiVersion = version;
    res.setHeader(API_VERSION_HEADER, version.name);
    next();
  };
}

/**
 * Called by authentication once it knows the account: a request that sent no `TaskApi-Version`
 * gets the account's pinned version from here on (an unknown pinned name keeps the newest).
 */
export function adoptAccountVersion(res: Response, versions: ApiVersions, pinned: string): void {
  const ctx = locals(res);
  if (ctx.apiVersionSent || ctx.apiVersion === undefined || ctx.apiVersion.name === pinned) return;
  const version = versions.resolve(pinned);
  if (!version) return;
  ctx.apiVersion = version;
  res.setHeader(API_VERSION_HEADER, version.name);
}

/** The version shaping this request, when its answers need a transform; undefined otherwise (the usual case). */
function transforming(res: Response, side: 'request' | 'response'): ResolvedVersion | undefined {
  const version = locals(res).apiVersion;
  if (!version) return undefined;
  return (side === 'request' ? version.transformsRequests : version.transformsResponses) ? version : undefined;
}

/** The query and body in the newest version's shape (as sent when no transform applies). */
export function upgradeRequest(req: Request, res: Response, route: string, query: Record<string, unknown>, body: unknown): { query: Record<string, unknown>; body: unknown } {
  const version = transforming(res, 'request');
  if (!version) return { query, body };
  // Transforms work on copies: Express keeps its own parsed query.
  const upgraded = version.upgradeRequest({ method: req.method, route, query: structuredClone(query), body: structuredClone(body) });
  return { query: upgraded.query, body: upgraded.body };
}

/** A JSON answer's body in the request's version (the same object when no transform applies). */
export function downgradeResponse(req: Request, res: Response, status: number, body: unknown): unknown {
  const version = transforming(res, 'response');
  if (!version) return body;
  return version.downgradeResponse({ method: req.method, route: locals(res).versionedRoute ?? locals(res).route, status, body });
}

/** True when JSON answers to this request go through a transform (callers holding JSON text parse it only then). */
export function downgradesResponses(res: Response): boolean {
  return transforming(res, 'response') !== undefined;
}
