// Every dated version of the API, oldest first (docs/api.md, "Versions"). A change that would break
// clients ships as a new module next to this file, added at the end of `SHIPPED_VERSIONS`.
import { v20261101 } from './2026-11-01';
import type { ApiVersionChange, VersionedRequest, VersionedResponse } from './version-change';

/** The versions this release serves, oldest first; the last one is what new accounts are pinned to. */
export const SHIPPED_VERSIONS: readonly ApiVersionChange[] = [v20261101];

/** The newest shipped version: what an account created now is pinned to. */
export const NEWEST_VERSION: string = SHIPPED_VERSIONS[SHIPPED_VERSIONS.length - 1]!.version;

const VERSION_FORMAT = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True when `value` spells a real calendar date as `YYYY-MM-DD`. */
export function isVersionDate(value: string): boolean {
  const m = VERSION_FORMAT.exec(value);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return date.toISOString().slice(0, 10) === value;
}

/**
 * One version as requests use it: its name and the changes after it, worked out once, so that a
 * request of the newest version (the usual case) costs a length check and nothing else.
 */
export class ResolvedVersion {
  /** Changes with a request transform, oldest first (applied in that order). */
  private readonly upgrades: readonly ApiVersionChange[];
  /** Changes with a response transform, newest first (applied in that order). */
  private readonly downgrades: readonly ApiVersionChange[];

  constructor(
    readonly name: string,
    later: readonly ApiVersionChange[],
  ) {
    this.upgrades = later.filter((c) => c.upgradeRequest);
    this.downgrades = later.filter((c) => c.downgradeResponse).reverse();
  }

  get transformsRequests(): boolean {
    return this.upgrades.length > 0;
  }

  get transformsResponses(): boolean {
    return this.downgrades.length > 0;
  }

  /** The request in the newest version's shape. */
  upgradeRequest(request: VersionedRequest): VersionedRequest {
    for (const change of this.upgrades) change.upgradeRequest!(request);
    return request;
  }

  /** The answer's body in this version's shape. */
  downgradeResponse(response: VersionedResponse): unknown {
    for (const change of this.downgrades) change.downgradeResponse!(response);
    return response.body;
  }
}

/** The versions a deployment serves: which names exist, the newest, and how to reach each from the newest. */
export class ApiVersions {
  private readonly byName = new Map<string, ResolvedVersion>();
  /** Every version's name, oldest first. */
  readonly names: readonly string[];
  readonly latest: ResolvedVersion;

  constructor(changes: readonly ApiVersionChange[] = SHIPPED_VERSIONS) {
    if (changes.length === 0) throw new Error('an API needs at least one version');
    changes.forEach((change, i) => {
      if (!isVersionDate(change.version)) throw new Error(`API version ${change.version} is not a YYYY-MM-DD date`);
      const previous = changes[i - 1];
      if (previous && previous.version >= change.version) throw new Error(`API version ${change.version} must come after ${previous.version}`);
    });
    changes.forEach((change, i) => this.byName.set(change.version, new ResolvedVersion(change.version, changes.slice(i + 1))));
    this.names = changes.map((c) => c.version);
    this.latest = this.byName.get(this.names[this.names.length - 1]!)!;
  }

  /** The version named `name`, or undefined when there is none of that name. */
  resolve(name: string): ResolvedVersion | undefined {
    return this.byName.get(name);
  }
}
