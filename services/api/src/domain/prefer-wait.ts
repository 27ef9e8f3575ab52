/** Longest wait a request may ask for (`Prefer: wait=N`); larger values are treated as this. */
export const MAX_WAIT_SECONDS = 60;

/**
 * The seconds of a `Prefer: wait=N` header (RFC 7240), capped at `MAX_WAIT_SECONDS`; undefined
 * when absent or not understood. A preference a server does not understand is ignored, not an
 * error (RFC 7240 §2), so nothing here throws.
 */
export function preferredWaitSeconds(header: string | undefined): number | undefined {
  if (!header) return undefined;
  for (const preference of header.split(',')) {
    // A preference's own parameters follow `;`; `wait` has none we use.
    const token = preference.split(';')[0] ?? '';
    if (!/^\s*wait\s*(=|$)/i.test(token)) continue;
    // Only the first `wait` counts (RFC 7240 §2), understood or not.
    const match = /^\s*wait\s*=\s*(?:(\d+)|"(\d+)")\s*$/i.exec(token);
    const seconds = match ? Number(match[1] ?? match[2]) : 0;
    return seconds >= 1 ? Math.min(seconds, MAX_WAIT_SECONDS) : undefined;
  }
  return undefined;
}
