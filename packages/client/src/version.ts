// The package version, put in by the build (esbuild `define`) from package.json, so the User-Agent
// names the version that is actually installed. Running from source (tests) it reads "0.0.0-dev".
declare const __TASKAPI_CLIENT_VERSION__: string | undefined;

export const VERSION: string = typeof __TASKAPI_CLIENT_VERSION__ === 'string' ? __TASKAPI_CLIENT_VERSION__ : '0.0.0-dev';

interface ProcessLike {
  env?: Record<string, string | undefined>;
  versions?: { node?: string };
}

/** Node's `process` when there is one (not in browsers or most edge runtimes). */
export const runtimeProcess: ProcessLike | undefined = (globalThis as { process?: ProcessLike }).process;

/**
 * `taskapi-client-js/<version> (node <v>)` in Node; undefined elsewhere, where it is not sent (a
 * browser forbids the header, and Firefox answers the attempt with a CORS preflight).
 */
export function userAgent(): string | undefined {
  const node = runtimeProcess?.versions?.node;
  return node ? `taskapi-client-js/${VERSION} (node ${node})` : undefined;
}
