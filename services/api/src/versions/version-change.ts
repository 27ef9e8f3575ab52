// One dated version of the API and how it differs from the one before (docs/api.md, "Versions").
// The code below the edge speaks the newest version only; a request pinned to an older version is
// upgraded on the way in and its answer downgraded on the way out, one dated change at a time.

/** A request as a version change sees it: routed, authenticated, not yet validated. */
export interface VersionedRequest {
  /** `GET`, `POST`… */
  readonly method: string;
  /** The route's template, as the registry declares it: `/api/tasks/{publicId}`. */
  readonly route: string;
  /** The query parameters as parsed (strings, or arrays of them when repeated). */
  query: Record<string, unknown>;
  /** The parsed JSON body, or undefined without one. */
  body: unknown;
}

/** A JSON answer as a version change sees it, before it is written. */
export interface VersionedResponse {
  readonly method: string;
  /** The route's template, or undefined when no route served the request (an unknown path, a refusal before routing). */
  readonly route: string | undefined;
  readonly status: number;
  /** The JSON body. For a task event stream (`/api/tasks/{publicId}/events`) each event's task, one at a time. */
  body: unknown;
}

/**
 * A dated version: its date, what changed from the version before, and the two transforms that
 * bridge them. A version that changes nothing a client can see (the first one) has neither.
 */
export interface ApiVersionChange {
  /** The version's name, a UTC date: `2026-11-01`. */
  readonly version: string;
  /** What a client of the previous version must change to move to this one (docs/api.md lists them). */
  readonly summary: string;
  /**
   * Turns a request written for the previous version into one of this version (in place). A task's
   * `payload` is stored from the body's raw text, exactly as sent: a transform never touches it.
   */
  upgradeRequest?(request: VersionedRequest): void;
  /** Turns an answer of this version into the previous version's shape (in place). */
  downgradeResponse?(response: VersionedResponse): void;
}
