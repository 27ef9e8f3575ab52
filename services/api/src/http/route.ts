// One HTTP operation, declared once: method, path, authentication, request and response schemas,
// the error codes it can answer with, and its handler. The Express router (`mount-routes.ts`) and
// the OpenAPI document (`openapi/build-document.ts`) are both built from these declarations, so
// the served API and its description cannot drift apart. (In the spirit of unkey's `createRoute`.)
import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { ApiDeps } from '../deps';
import type { KeyPrincipal, SessionPrincipal } from '../domain/principal';
import type { ReadTokenPrincipal } from './request-context';
import type { Prefetched } from '../domain/read-task';
import type { ErrorCode, FixedCode } from '../errors';
import type { ResponseHeader } from '../schemas/response-headers';

/**
 * `apiKey`: `X-Api-Key` plus rate limits; `readToken`: a browser read token (one task, the minting
 * key's rate limits); `session`: console login; `none`: public.
 */
export type Auth = 'apiKey' | 'readToken' | 'session' | 'none';

export type Tag = 'Tasks' | 'Public task reads' | 'Console session' | 'API keys' | 'Account' | 'Console tasks' | 'Webhook deliveries' | 'Operations';

type PrincipalOf<A extends Auth> = A extends 'apiKey' ? KeyPrincipal : A extends 'readToken' ? ReadTokenPrincipal : A extends 'session' ? SessionPrincipal : undefined;
type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** A documented response of one status. */
export interface ResponseSpec {
  description: string;
  /** The JSON body; a schema with `.meta({ id })` appears as a component. */
  schema?: z.ZodType;
  /** A non-JSON body: media type → JSON Schema (files, metrics), with its own example when `examples` is for JSON. */
  content?: Record<string, { schema: Record<string, unknown>; example?: unknown }>;
  /** Headers besides the ones every response of this route carries. */
  headers?: readonly ResponseHeader[];
  examples?: Record<string, { summary?: string; value: unknown }>;
}

export interface BodySpec<B extends z.ZodType> {
  schema: B;
  /** Largest accepted body in bytes (413 above). */
  limit: number;
  /**
   * Task creation: a body must be `application/json` (else 415), a missing body is refused before
   * validation, and the raw text is kept so `payload` can be echoed exactly as sent.
   */
  strict?: boolean;
  /**
   * Top-level members stored and echoed exactly as sent (`payload`): exempt from the check for
   * text PostgreSQL cannot store, because they are kept as JSON text, escapes and all.
   */
  verbatim?: readonly string[];
  example?: unknown;
}

/** Path parameters or headers: their schema, the code a bad value answers, and a description of each. */
export interface InputSpec<S> {
  schema: S;
  invalid: FixedCode;
  describe: Record<string, string>;
}

/** The validated inputs a handler receives, typed from the route's schemas. */
export interface RouteInput<P, Q, H, B> {
  params: Parsed<P>;
  query: Parsed<Q>;
  headers: Parsed<H>;
  body: Parsed<B>;
  /** The body as sent (strict bodies only). */
  rawBody: string | undefined;
}

export interface RouteContext<A extends Auth> {
  deps: ApiDeps;
  principal: PrincipalOf<A>;
  /** What the rate limiter read along with the limit, when the route's read path asked (domain/read-task.ts). */
  prefetched: Prefetched | undefined;
  req: Request;
  res: Response;
}

/** What a handler answers. `sent`: it wrote the response itself (files, cookies + 204). */
export type Reply =
  | { status: number; json: unknown; headers?: Record<string, string> }
  | { status: number; jsonText: string; headers?: Record<string, string> }
  | { sent: true };

export interface RouteSpec<A extends Auth, P, Q, H, B> {
  operationId: string;
  method: 'get' | 'post' | 'patch';
  /** OpenAPI path template: `/api/tasks/{publicId}`. */
  path: string;
  /**
   * The template API version changes see, when this route answers exactly as another one does (a
   * read token's `/api/public/tasks/{publicId}` as `/api/tasks/{publicId}`): a change written for the
   * key's route then shapes this one's answers too. Default: `path`.
   */
  versionedAs?: string;
  tag: Tag;
  summary: string;
  description?: string;
  auth: A;
  /** Path parameters; a value that fails its schema answers `invalid` (ids that cannot exist are "not found"). */
  params?: InputSpec<P>;
  query?: Q;
  /** Request headers, by lower-case name; a value that fails its schema answers `invalid`. */
  headers?: InputSpec<H>;
  body?: B extends z.ZodType ? BodySpec<B> : never;
  responses: Record<number, ResponseSpec>;
  /** Codes the handler can answer with, besides those its authentication, parameters and body imply. */
  errors?: readonly ErrorCode[];
  /** Example 400 validation problems for the document: `[summary, field, problem]`. */
  invalidExamples?: ReadonlyArray<readonly [summary: string, field: string, problem: string]>;
  /** Checks that come before input validation (login: refuse API keys and cross-site posts first). */
  guard?(req: Request, deps: ApiDeps): void;
  handler(input: RouteInput<P, Q, H, B>, ctx: RouteContext<A>): Promise<Reply> | Reply;
}

/** A route with its types erased, as the registry holds it. */
export type Route = RouteSpec<Auth, z.ZodType | undefined, z.ZodType | undefined, z.ZodType | undefined, z.ZodType | undefined>;

export function defineRoute<
  A extends Auth,
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  H extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<A, P, Q, H, B>): Route {
  return spec as unknown as Route;
}

/** `/api/tasks/{publicId}` → `/api/tasks/:publicId`. */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
