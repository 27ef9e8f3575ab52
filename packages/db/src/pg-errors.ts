// PostgreSQL error codes we branch on (https://www.postgresql.org/docs/current/errcodes-appendix.html),
// from pg errors and from Prisma's wrapped ones (P2002 = unique).
const PRISMA_TO_PG: Record<string, string> = { P2002: '23505' };

function sqlState(err: unknown, depth = 0): string | undefined {
  if (typeof err !== 'object' || err === null || depth > 4) return undefined;
  const e = err as { code?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } };
  const original = e.meta?.driverAdapterError?.cause?.originalCode;
  if (typeof original === 'string') return original;
  if (typeof e.code === 'string') {
    if (PRISMA_TO_PG[e.code]) return PRISMA_TO_PG[e.code];
    if (/^[0-9A-Z]{5}$/.test(e.code) && !e.code.startsWith('P')) return e.code;
  }
  return sqlState(e.cause, depth + 1);
}

/** unique_violation (23505). */
export function isUniqueViolation(err: unknown): boolean {
  return sqlState(err) === '23505';
}
