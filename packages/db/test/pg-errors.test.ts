// The error classes the services branch on, checked against real errors: from pg and from
// Prisma's pg adapter, with PostgreSQL unreachable, restarting a connection, or refusing a value.
import pg from 'pg';
import { freePort, TEST_DATABASE_URL } from '@taskapi/testing';
import { createDatabase, isDatabaseUnavailable, isValueRefused } from '../src';

async function errorOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected the work to fail');
}

describe('PostgreSQL error classes', () => {
  it('unreachable: pg and Prisma errors for a closed port are "unavailable", not "refused"', async () => {
    const closed = new URL(TEST_DATABASE_URL);
    closed.port = String(await freePort());
    const db = createDatabase({ url: closed.toString(), poolSize: 1 });
    try {
      for (const err of [await errorOf(() => db.pool.query('SELECT 1')), await errorOf(() => db.prisma.account.findFirst())]) {
        expect({ unavailable: isDatabaseUnavailable(err), refused: isValueRefused(err) }).toEqual({ unavailable: true, refused: false });
      }
    } finally {
      await db.close();
    }
  });

  it('a connection the server ends (57P01) is "unavailable"', async () => {
    const victim = new pg.Client({ connectionString: TEST_DATABASE_URL });
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await Promise.all([victim.connect(), admin.connect()]);
    victim.on('error', () => undefined);
    try {
      const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const sleeping = errorOf(() => victim.query('SELECT pg_sleep(30)'));
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(isDatabaseUnavailable(await sleeping)).toBe(true);
    } finally {
      await Promise.all([victim.end().catch(() => undefined), admin.end()]);
    }
  });

  it('values PostgreSQL refuses are "refused" through pg and through Prisma; bugs of our own SQL are neither', async () => {
    const db = createDatabase({ url: TEST_DATABASE_URL, poolSize: 2 });
    try {
      const refused = [
        await errorOf(() => db.pool.query('SELECT $1::text', ['a\u0000b'])),
        await errorOf(() => db.pool.query('SELECT $1::smallint', [70_000])),
        // A key longer than its column (varchar(255)): 22001.
        await errorOf(() => db.pool.query("INSERT INTO idempotency_keys (account_id, key, fingerprint, task_id) VALUES ('a', $1, 'f', 1)", ['k'.repeat(300)])),
        await errorOf(() => db.prisma.$queryRaw`SELECT ${'a\u0000b'}::text`),
        await errorOf(() => db.prisma.$queryRaw`SELECT ${'2026-13-45'}::date`),
      ];
      refused.forEach((err, i) =>
        expect({ i, refused: isValueRefused(err), unavailable: isDatabaseUnavailable(err) }).toEqual({ i, refused: true, unavailable: false }),
      );
      const bugs = [
        await errorOf(() => db.pool.query('SELECT 1 / 0')),
        await errorOf(() => db.pool.query("SELECT 'x'::int")),
        await errorOf(() => db.pool.query('SELECT nope FROM accounts')),
      ];
      bugs.forEach((err, i) =>
        expect({ i, refused: isValueRefused(err), unavailable: isDatabaseUnavailable(err) }).toEqual({ i, refused: false, unavailable: false }),
      );
    } finally {
      await db.close();
    }
  });
});
