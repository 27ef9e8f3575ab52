// The raw-SQL style of every service's repositories: named (prepared) statements on the shared pg
// pool, each with a zod schema that parses its rows, so a row type is declared once and checked at
// run time. Prisma serves the table families that are not on a hot path (docs/architecture.md).
import type pg from 'pg';
import { isDatabaseUnavailable } from './pg-errors';
import type { z } from 'zod';

/** The pg pool, or one client inside a transaction. */
export interface SqlExecutor {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/**
 * One SQL statement. `name` makes pg prepare it once per connection; the same name must always
 * carry the same text. `row` parses each returned row and is where the row type comes from.
 */
export interface Statement<Row extends z.ZodType> {
  name: string;
  text: string;
  row: Row;
  /**
   * False: sent unnamed, so PostgreSQL plans it at every call for its values (a custom plan). For a
   * statement whose best plan depends on them — a range that may hold 30 rows or 100,000 — where a
   * prepared statement's generic plan, estimated for no values in particular, can be far off.
   */
  prepared: boolean;
}

/** Declares a statement; its row type is `z.output<typeof row>`. */
export function statement<Row extends z.ZodType>(name: string, text: string, row: Row, opts: { prepared?: boolean } = {}): Statement<Row> {
  return { name, text, row, prepared: opts.prepared ?? true };
}

/** A result row that does not match its statement's schema: the SQL and the schema disagree (a bug). */
export class RowShapeError extends Error {
  constructor(statementName: string, cause: unknown) {
    super(`a row of statement "${statementName}" does not match its schema`, { cause });
    this.name = 'RowShapeError';
  }
}

/** Runs `stmt` and parses every row. */
export async function queryRows<Row extends z.ZodType>(db: SqlExecutor, stmt: Statement<Row>, values: unknown[]): Promise<Array<z.output<Row>>> {
  const { rows } = await db.query(stmt.prepared ? { name: stmt.name, text: stmt.text, values } : { text: stmt.text, values });
  const parsed: Array<z.output<Row>> = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const result = stmt.row.safeParse(rows[i]);
    if (!result.success) throw new RowShapeError(stmt.name, result.error);
    parsed[i] = result.data;
  }
  return parsed;
}

/** Runs `stmt` and parses its first row, or returns null when there is none. */
export async function queryFirst<Row extends z.ZodType>(db: SqlExecutor, stmt: Statement<Row>, values: unknown[]): Promise<z.output<Row> | null> {
  return (await queryRows(db, stmt, values))[0] ?? null;
}

/** Runs a statement that returns no rows the caller needs; returns how many rows it touched. */
export async function execute(db: SqlExecutor, name: string, text: string, values: unknown[]): Promise<number> {
  const { rowCount } = await db.query({ name, text, values });
  return rowCount ?? 0;
}

/**
 * Runs `fn` on one connection inside BEGIN … COMMIT; any error rolls back and is rethrown.
 * `fn` decides to roll back without an error by returning `{ commit: false, value }`.
 */
export async function transaction<T>(pool: pg.Pool, fn: (client: SqlExecutor) => Promise<{ commit: boolean; value: T }>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client whose connection drops between two statements (a primary switch, the
  // proxy cutting sessions) emits 'error' with no query to fail: unheard, it would end the process.
  // The next statement fails instead, and the connection is discarded below.
  let lost: Error | undefined;
  const onLost = (err: Error) => (lost ??= err);
  client.on('error', onLost);
  try {
    await client.query('BEGIN');
    const { commit, value } = await fn(client);
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    return value;
  } catch (err) {
    // A connection to a server that cannot serve (a standby after a switch: 25006, one shutting
    // down) is not reused either: the next caller gets a fresh one through the proxy.
    if (isDatabaseUnavailable(err)) lost ??= err as Error;
    // The error that aborted the transaction is the one to report; a failed ROLLBACK adds nothing.
    await client.query('ROLLBACK').catch((rollbackFailed: Error) => (lost ??= rollbackFailed));
    throw err;
  } finally {
    client.off('error', onLost);
    // A connection that failed is destroyed, not handed to the next caller.
    client.release(lost);
  }
}
