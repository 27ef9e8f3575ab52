// Pure, and without the SDK's modules: `withServerSpans` (server-spans.ts) is loaded in every
// process, `TracePolicySampler` (trace-policy.ts, which loads the SDK) only with an endpoint.

/**
 * Which requests start a trace of their own (docs/architecture.md, "Tracing"): what changes a
 * task or an account — creations, cancels, console and API writes (any POST, PUT, PATCH or
 * DELETE) — except under `/api/public/`. Reads (`GET /api/tasks/{id}` and the list, polled by
 * clients), event streams, `/api/public/*`, probes and `/metrics` are traced only when the caller
 * sends a sampled `traceparent` (the parent-based sampler keeps the caller's decision).
 * @param method the request's method, upper case (as `req.method` has it).
 * @param path the request's path, without its query.
 */
export function tracedByDefault(method: string | undefined, path: string | undefined): boolean {
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH' && method !== 'DELETE') return false;
  return path === undefined || !(path === '/api/public' || path.startsWith('/api/public/'));
}
