import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client';

export interface DatabaseOptions {
  url: string;
  /** Connections in the shared pool (Prisma and hot-path SQL use the same pool). */
  poolSize?: number;
  /** Name reported in pg_stat_activity. */
  applicationName?: string;
  onPoolError?: (err: Error) => void;
}

export interface Database {
  /** Prisma client for ordinary reads and writes. */
  prisma: PrismaClient;
  /**
   * The pg pool (int8 columns arrive as strings), for the hot or multi-table atomic statements the
   * services write as single SQL statements with named (prepared) queries, e.g. task creation.
   */
  pool: pg.Pool;
  close(): Promise<void>;
}

export function createDatabase(opts: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    application_name: opts.applicationName,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
  });
  const onError = opts.onPoolError ?? (() => undefined);
  pool.on('error', onError);
  const adapter = new PrismaPg(pool, { onPoolError: onError });
  const prisma = new PrismaClient({ adapter });
  let closed = false;
  return {
    prisma,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      await prisma.$disconnect();
      await pool.end();
    },
  };
}
