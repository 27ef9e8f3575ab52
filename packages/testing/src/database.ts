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
