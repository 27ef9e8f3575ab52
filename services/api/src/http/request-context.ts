import type { Response } from 'express';
import type { KeyPrincipal, SessionPrincipal } from '../domain/principal';
import type { Prefetched } from '../domain/read-task';
import type { RateLimitTicket } from '../domain/rate-limit';
import type { ResolvedVersion } from '../versions/registry';

export type { KeyPrincipal, SessionPrincipal };

/** Per-request values, kept in `res.locals` with these names. */
export interface RequestLocals {
  requestId: string;
  startedAt: bigint;
  /** The registry's template of the route that serves the request (`/api/tasks/{publicId}`), once routed. */
  route?: string;
  /** The template API version changes see (the route's `versionedAs`, else `route`). */
  versionedRoute?: string;
  key?: KeyPrincipal;
  /** A read token's request: the one task it reads (`key` is its minting key). */
  readTaskId?: string;
  /** A read token's request: when the token stops reading (ms since the epoch; an event stream ends then). */
  readTokenEndsAt?: number;
  session?: SessionPrincipal;
  publicId?: string;
  /** The request's trace id for the access line, where a route knows it (a creation). */
  traceId?: string;
  /** What the rate limiter read for the route along with the limit (domain/read-task.ts). */
  prefetched?: Prefetched;
  /** Where the rate limiter counted this request (a batch turns it into one request per task). */
  rateLimitTicket?: RateLimitTicket;
  /** The API version shaping the request (http/api-version.ts); set for every /api request. */
  apiVersion?: ResolvedVersion;
  /** True when the request chose its version with `TaskApi-Version` (the account's pinned one then does not apply). */
  apiVersionSent?: boolean;
  /**
   * When an event stream's headers went out (`process.hrtime.bigint()`): the request's duration
   * ends there, and the stream's own life is measured apart (`taskapi_event_stream_duration_seconds`).
   */
  streamOpenedAt?: bigint;
  /** The raw JSON body text (task creation only), for echoing `payload` unchanged. */
  rawBody?: string;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

export function keyPrincipal(res: Response): KeyPrincipal {
  const key = locals(res).key;
  if (!key) throw new Error('API-key middleware did not run for this route');
  return key;
}

/** A request by read token: its minting key, and the one task it may read. */
export interface ReadTokenPrincipal extends KeyPrincipal {
  readTaskId: string;
}

export function readTokenPrincipal(res: Response): ReadTokenPrincipal {
  const { key, readTaskId } = locals(res);
  if (!key || readTaskId === undefined) throw new Error('Read-token middleware did not run for this route');
  return { ...key, readTaskId };
}

export function sessionPrincipal(res: Response): SessionPrincipal {
  const session = locals(res).session;
  if (!session) throw new Error('Session middleware did not run for this route');
  return session;
}
