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

// PostgreSQL could not be reached or could not serve the statement right now, as opposed to an
// error of the statement itself (which no amount of waiting fixes): socket failures, SQLSTATE
// classes 08 (connection), 53 (insufficient resources) and 57P0x (shutdown, restart),
// serialization failures and deadlocks, and the messages pg raises without a code.
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '40001', '40P01']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Connection ended|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/;

/** Whether `err` means "PostgreSQL is unreachable or restarting" (worth waiting for), not "this statement is wrong". */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  // Socket errors surface from pg as plain objects with a code, not always as Error instances.
  const { code, message } = err as { code?: unknown; message?: unknown };
  const state = typeof code === 'string' ? code : sqlState(err);
  if (state !== undefined && (UNAVAILABLE_CODES.has(state) || /^(08|53|57P0)/.test(state))) return true;
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message);
}

// Prisma's own codes for a value the column cannot take: too long (P2000), invalid (P2006, P2007),
// out of range (P2020), a number too large (P2033).
const PRISMA_VALUE_CODES = new Set(['P2000', 'P2006', 'P2007', 'P2020', 'P2033']);

/**
 * Whether PostgreSQL refused a value rather than failed: class 22 (data exception: bytes it cannot
 * store, a number out of range for its column, a bad date) or 54000 (a value too large to index).
 */
export function isValueRefused(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && PRISMA_VALUE_CODES.has(code)) return true;
  const state = sqlState(err);
  return state !== undefined && (state.startsWith('22') || state === '54000');
}
