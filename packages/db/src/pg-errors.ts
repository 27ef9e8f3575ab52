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
// serialization failures and deadlocks, a write that reached a standby (25006: a proxy still
// routing to a demoted primary during a switch), and the messages pg raises without a code. Prisma's pg
// adapter reports the same failures as error kinds and its own P1xxx/P2xxx codes.
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '40001', '40P01', '25006']);
const UNAVAILABLE_STATES = /^(08|53|57P0)/;
const PRISMA_UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2034', 'P2037']);
const ADAPTER_UNAVAILABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'TransactionWriteConflict']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Connection ended|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/;

interface ErrorShape {
  code?: unknown;
  message?: unknown;
  name?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown } } };
}

/** Whether `err` means "PostgreSQL is unreachable or restarting" (worth waiting for), not "this statement is wrong". */
export function isDatabaseUnavailable(err: unknown): boolean {
  const state = sqlState(err);
  if (state !== undefined && (UNAVAILABLE_CODES.has(state) || UNAVAILABLE_STATES.test(state))) return true;
  // Socket errors surface from pg as plain objects with a code, not always as Error instances.
  for (let e = err as ErrorShape | undefined, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = e.cause as ErrorShape | undefined, depth++) {
    if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || PRISMA_UNAVAILABLE_CODES.has(e.code))) return true;
    const kind = e.meta?.driverAdapterError?.cause?.kind ?? (e.name === 'DriverAdapterError' ? (e.cause as { kind?: unknown } | undefined)?.kind : undefined);
    if (typeof kind === 'string' && ADAPTER_UNAVAILABLE_KINDS.has(kind)) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  }
  return false;
}

// A value the column cannot take, the only class-22 refusals client input can cause: too long
// (22001), out of range (22003), a bad date (22007, 22008), bytes text cannot hold (22021,
// 22P05), and a value too large to index (54000). Others of class 22 (division by zero, a bad
// cast in our own SQL) are bugs and stay 500s. Prisma's codes for the same: P2000 (too long for
// the column), P2006/P2007 (invalid value), P2020 (out of range), P2033 (a number too large).
const REFUSED_STATES = new Set(['22001', '22003', '22007', '22008', '22021', '22P05', '54000']);
const PRISMA_VALUE_CODES = new Set(['P2000', 'P2006', 'P2007', 'P2020', 'P2033']);

/** Whether PostgreSQL refused a value from the request rather than failed. */
export function isValueRefused(err: unknown): boolean {
  const code = (err as ErrorShape | null)?.code;
  if (typeof code === 'string' && PRISMA_VALUE_CODES.has(code)) return true;
  const state = sqlState(err);
  return state !== undefined && REFUSED_STATES.has(state);
}
