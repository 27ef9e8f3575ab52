import { randomBase62 } from '@taskapi/crypto';

/** Prefixes of every externally visible id. */
export const ID_PREFIXES = {
  account: 'acct',
  grant: 'grant',
  key: 'key',
  task: 'task',
  delivery: 'whd',
  request: 'req',
  session: 'ses',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** 22 base62 characters: about 131 random bits. */
const BODY_LENGTH = 22;

/**
 * A new prefixed id, e.g. `task_3kT9...`. A body never starts with `test`: that start is kept for
 * sample ids (test webhooks), so a receiver can tell them apart by the id alone.
 */
export function newId(kind: IdKind): string {
  return idFromBodies(kind, () => randomBase62(BODY_LENGTH));
}

/** `newId`'s rule over any source of bodies: the first one that does not start with `test`. */
export function idFromBodies(kind: IdKind, nextBody: () => string): string {
  for (;;) {
    const body = nextBody();
    if (!body.startsWith('test')) return `${ID_PREFIXES[kind]}_${body}`;
  }
}

const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_[A-Za-z0-9]{${BODY_LENGTH}}$`)]),
) as Record<IdKind, RegExp>;

/** True when `value` is shaped like an id of this kind (no database lookup). */
export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}

/**
 * Ids for high-volume, non-secret uses (request ids): a random per-process prefix and a counter,
 * so generating one costs no randomness. Unique across processes with overwhelming probability.
 */
export function sequentialIds(kind: IdKind): () => string {
  const prefix = `${ID_PREFIXES[kind]}_${randomBase62(12)}`;
  let n = 0;
  return () => `${prefix}${(n++).toString(36).padStart(6, '0')}`;
}
