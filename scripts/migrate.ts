// `npm run migrate`: creates the database if needed and applies prisma/migrations the way
// `prisma migrate deploy` does (see packages/db/src/migrate.ts). Needs only DATABASE_URL.
import { loadDatabaseUrl } from '@taskapi/config';
import { applyMigrations, databaseName, ensureDatabaseExists } from '@taskapi/db';

async function main(): Promise<void> {
  const url = loadDatabaseUrl();
  if (await ensureDatabaseExists(url)) console.log(`created database ${databaseName(url)}`);
  const result = await applyMigrations(url, { log: (line) => console.log(line) });
  console.log(
    result.applied.length
      ? `applied ${result.applied.length} migration(s); database ${databaseName(url)} is up to date`
      : `database ${databaseName(url)} is up to date (${result.alreadyApplied.length} migration(s))`,
  );
}

main().catch((err: unknown) => {
  console.error(`migration failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
