import pg from 'pg';
import { applyMigrations, databaseName } from '@taskapi/db';

/** Drops and recreates `url`'s database, then migrates it: every run starts from an empty schema. */
export async function recreateDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const quoted = `"${name.replace(/"/g, '""')}"`;
    await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quoted}`);
  } finally {
    await client.end();
  }
  await applyMigrations(url);
}
