import { applyMigrations, databaseName, quoteIdent, withServerClient } from '@taskapi/db';

/** Drops and recreates `url`'s database, then migrates it: every run starts from an empty schema. */
export async function recreateDatabase(url: string): Promise<void> {
  const name = quoteIdent(databaseName(url));
  await withServerClient(url, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
  await applyMigrations(url);
}
