import { randomUUID, createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';

/**
 * Applied migrations whose comments were reworded after they shipped, their SQL unchanged (the
 * comment cited a document outside the repository): the checksums they were applied with, taken
 * in place of today's and replaced by it. Nothing else may ever change an applied migration.
 */
export const REWORDED_MIGRATIONS: Readonly<Record<string, readonly string[]>> = {
  '20261125000000_task_files_retention': ['204cb49fc3b3b10d79bb3bae41696b008fbc0ae502d0588662966a1bfbe71793'],
};

/**
 * `prisma/migrations` of this repository: the nearest one above this code, which is
 * packages/db/src from source and dist/ (one level below the root) when built.
 */
export const MIGRATIONS_DIR = findMigrationsDir(__dirname);

function findMigrationsDir(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'prisma', 'migrations');
    if (fs.existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return path.resolve(from, '../../../prisma/migrations');
  }
}

// The advisory lock key `prisma migrate deploy` takes, so this runner and Prisma's never interleave.
const PRISMA_MIGRATE_LOCK = 72707369;

// Prisma's bookkeeping table, created exactly as the Prisma schema engine creates it.
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  name: string;
  sql: string;
  /** Hex SHA-256 of the file's bytes: the checksum Prisma records. */
  checksum: string;
}

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

/** The migrations in `dir`, in the order Prisma applies them (folder name order). */
export function listMigrations(dir = MIGRATIONS_DIR): MigrationFile[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const bytes = fs.readFileSync(path.join(dir, name, 'migration.sql'));
      return { name, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') };
    });
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/**
 * Prisma's advisory lock, polled rather than waited for inside one statement: a waiting statement
 * holds a snapshot, and a `CREATE INDEX CONCURRENTLY` in the holder's migration waits for every
 * snapshot to end, so a blocked second migrator would deadlock it.
 */
async function takeMigrationLock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PRISMA_MIGRATE_LOCK]);
    if (rows[0]?.locked) return;
    await delay(200);
  }
}

/**
 * Applies pending migrations the way `prisma migrate deploy` does (same lock, same
 * `_prisma_migrations` rows and checksums), without needing Prisma's native schema engine.
 * Refuses to continue past a failed or edited migration, as Prisma does.
 */
export async function applyMigrations(
  databaseUrl: string,
  opts: { dir?: string; log?: (line: string) => void } = {},
): Promise<MigrationResult> {
  const log = opts.log ?? (() => undefined);
  const migrations = listMigrations(opts.dir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'taskapi-migrate' });
  await client.connect();
  try {
    await takeMigrationLock(client);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<AppliedRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at, logs FROM "_prisma_migrations" ORDER BY started_at',
    );
    const failed = rows.find((r) => r.finished_at === null && r.rolled_back_at === null);
    if (failed) {
      throw new Error(
        `Migration ${failed.migration_name} failed earlier and must be resolved first ` +
          `(fix the database, then mark it with \`prisma migrate resolve\`). Its log:\n${failed.logs ?? '(none)'}`,
      );
    }
    const done = new Map(rows.filter((r) => r.finished_at !== null && r.rolled_back_at === null).map((r) => [r.migration_name, r]));
    const known = new Set(migrations.map((m) => m.name));
    for (const name of done.keys()) {
      if (!known.has(name)) throw new Error(`Migration ${name} is recorded in the database but missing from ${opts.dir ?? MIGRATIONS_DIR}`);
    }
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const m of migrations) {
      const row = done.get(m.name);
      if (row) {
        if (row.checksum !== m.checksum) {
          if (!REWORDED_MIGRATIONS[m.name]?.includes(row.checksum)) {
            throw new Error(`Migration ${m.name} was edited after it was applied (checksum differs); add a new migration instead`);
          }
          // Only a comment of it changed: the history takes the file as it is now.
          await client.query('UPDATE "_prisma_migrations" SET checksum = $2 WHERE migration_name = $1 AND checksum = $3', [m.name, m.checksum, row.checksum]);
          log(`migration ${m.name}: reworded comment, checksum updated`);
        }
        result.alreadyApplied.push(m.name);
        continue;
      }
      const id = randomUUID();
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
        [id, m.checksum, m.name],
      );
      log(`applying migration ${m.name}`);
      try {
        // One simple-protocol query: PostgreSQL runs a multi-statement script as one implicit
        // transaction, so a failing migration leaves no partial schema behind.
        await client.query(m.sql);
      } catch (err) {
        await client.query('UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1', [id, String((err as Error).message)]);
        throw new Error(`Migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
      result.applied.push(m.name);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
    await client.end();
  }
}
