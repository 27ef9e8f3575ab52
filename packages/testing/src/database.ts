import { applyMigrations, databaseName, quoteIdent, withServerClient } from '@taskapi/db';

/** Written on every database the suite creates; only such databases are ever dropped. */
const OWNER_COMMENT = 'created by the taskapi test suite; dropped and recreated by every run';

/**
 * Drops and recreates `url`'s database, then migrates it (unless `migrate: false`): every run
 * starts from an empty schema.
 * A database the suite did not create (no owner comment) is never dropped: the call fails instead,
 * naming it, so a mistyped TEST_DATABASE_URL cannot wipe development or production data.
 */
export async function recreateDatabase(url: string, opts: { migrate?: boolean } = {}): Promise<void> {
  const name = databaseName(url);
  await withServerClient(url, async (client) => {
    const { rows } = await client.query<{ comment: string | null }>(
      'SELECT shobj_description(oid, $2) AS comment FROM pg_database WHERE datname = $1',
      [name, 'pg_database'],
    );
    if (rows[0] && rows[0].comment !== OWNER_COMMENT) {
      throw new Error(`database "${name}" exists and was not created by the test suite; refusing to drop it (choose another TEST_DATABASE_URL or drop it yourself)`);
    }
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    await client.query(`COMMENT ON DATABASE ${quoteIdent(name)} IS '${OWNER_COMMENT}'`);
  });
  if (opts.migrate !== false) await applyMigrations(url);
}

/**
 * Drops the databases a test run created (its own and its files' `<name>_<suffix>` ones): only
 * databases the suite created (owner comment), whose names start with `url`'s.
 */
export async function dropTestDatabases(url: string): Promise<string[]> {
  const name = databaseName(url);
  return withServerClient(url, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE (datname = $1 OR starts_with(datname, $1 || '_')) AND shobj_description(oid, 'pg_database') = $2`,
      [name, OWNER_COMMENT],
    );
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
    return rows.map((r) => r.datname);
  });
}
