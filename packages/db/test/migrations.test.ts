import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { TEST_DATABASE_URL } from '@taskapi/testing';
import { applyMigrations, listMigrations, MIGRATIONS_DIR, SQL_ONLY_CONSTRAINTS, SQL_ONLY_FUNCTIONS } from '../src';
import { REWORDED_MIGRATIONS } from '../src/migrate';

// Prisma's own reading of prisma/schema.prisma, written by the dmmf-snapshot generator.
import dmmf from '../src/generated/dmmf.json';

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: 'scalar' | 'enum' | 'object';
  type: string;
  isRequired: boolean;
  isList: boolean;
  nativeType?: [string, string[]] | null;
  default?: unknown;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string | null;
}
interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal';
  dbName?: string | null;
  fields: Array<{ name: string; sortOrder?: 'asc' | 'desc' }>;
}

const models = dmmf.models as unknown as DmmfModel[];
const indexes = dmmf.indexes as unknown as DmmfIndex[];
const enums = dmmf.enums as unknown as Array<{ name: string; dbName: string | null; values: Array<{ name: string; dbName: string | null }> }>;

const tableOf = (m: DmmfModel) => m.dbName ?? m.name;
const modelByName = new Map(models.map((m) => [m.name, m]));
const columnOf = (model: DmmfModel, fieldName: string) => {
  const f = model.fields.find((x) => x.name === fieldName);
  if (!f) throw new Error(`${model.name}.${fieldName} not in DMMF`);
  return f.dbName ?? f.name;
};

/** PostgreSQL type Prisma creates for a field (information_schema spelling). */
function expectedType(f: DmmfField): { data_type: string; udt_name?: string; length?: number; precision?: number } {
  if (f.kind === 'enum') {
    const e = enums.find((x) => x.name === f.type);
    return { data_type: 'USER-DEFINED', udt_name: e?.dbName ?? f.type };
  }
  const [native, args] = f.nativeType ?? [null, []];
  switch (f.type) {
    case 'String':
      if (native === 'Char') return { data_type: 'character', length: Number(args[0]) };
      if (native === 'VarChar') return { data_type: 'character varying', length: Number(args[0]) };
      return { data_type: 'text' };
    case 'Int':
      return { data_type: native === 'SmallInt' ? 'smallint' : 'integer' };
    case 'BigInt':
      return { data_type: 'bigint' };
    case 'Boolean':
      return { data_type: 'boolean' };
    case 'Float':
      return { data_type: native === 'Real' ? 'real' : 'double precision' };
    case 'Bytes':
      return { data_type: 'bytea' };
    case 'Json':
      return { data_type: native === 'Json' ? 'json' : 'jsonb' };
    case 'DateTime':
      if (native === 'Date') return { data_type: 'date' };
      return native === 'Timestamptz'
        ? { data_type: 'timestamp with time zone', precision: Number(args[0] ?? 6) }
        : { data_type: 'timestamp without time zone', precision: Number(args[0] ?? 3) };
    default:
      throw new Error(`no mapping for ${f.type}`);
  }
}

/** The column default Prisma's migration engine writes, as PostgreSQL reports it back. */
function expectedDefault(f: DmmfField, table: string, column: string): string | null {
  const d = f.default as { name?: string } | string | number | boolean | undefined;
  if (d === undefined || d === null) return null;
  if (typeof d === 'object' && d.name === 'autoincrement') return `nextval('${table}_${column}_seq'::regclass)`;
  if (typeof d === 'object' && d.name === 'now') return 'CURRENT_TIMESTAMP';
  if (typeof d === 'number' || typeof d === 'boolean') return String(d);
  // The DMMF gives a BigInt's default as its decimal text.
  if (f.type === 'BigInt') return String(d);
  if (f.kind === 'enum') return `'${d}'::${expectedType(f).udt_name}`;
  if (f.type === 'Json') return `'${d}'::${expectedType(f).data_type}`;
  return `'${d}'::text`;
}

const ON_DELETE: Record<string, string> = { Cascade: 'c', Restrict: 'r', SetNull: 'n', NoAction: 'a', SetDefault: 'd' };

/**
 * The `CREATE [OR REPLACE] FUNCTION name(…) … AS $tag$ body $tag$ …;` statements of a SQL text, in
 * order, with each one's dollar-quoted body.
 */
function functionDefinitions(sql: string): Array<{ name: string; statement: string; body: string }> {
  const found: Array<{ name: string; statement: string; body: string }> = [];
  for (const m of sql.matchAll(/CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+"?([a-z_][a-z0-9_]*)"?\s*\(/gi)) {
    const name = (m[1] as string).toLowerCase();
    const opener = /\bAS\s+(\$[A-Za-z_]*\$)/.exec(sql.slice(m.index));
    if (!opener?.[1]) throw new Error(`function ${name} has no dollar-quoted body`);
    const bodyStart = m.index + opener.index + opener[0].length;
    const bodyEnd = sql.indexOf(opener[1], bodyStart);
    const end = sql.indexOf(';', bodyEnd + opener[1].length);
    if (bodyEnd < 0 || end < 0) throw new Error(`function ${name}: unterminated body or statement`);
    found.push({ name, statement: sql.slice(m.index, end + 1).trim(), body: sql.slice(bodyStart, bodyEnd) });
  }
  return found;
}

describe('the migrated database matches prisma/schema.prisma', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
  });

  it('has exactly the schema\'s tables (plus Prisma\'s bookkeeping table)', async () => {
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    );
    expect(rows.map((r) => r.table_name).sort()).toEqual([...models.map(tableOf), '_prisma_migrations'].sort());
  });

  it('has exactly the schema\'s enums with their values in order', async () => {
    const { rows } = await client.query<{ typname: string; labels: string[] }>(
      `SELECT t.typname, array_agg(e.enumlabel ORDER BY e.enumsortorder)::text[] AS labels
         FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname`,
    );
    const actual = Object.fromEntries(rows.map((r) => [r.typname, r.labels]));
    const expected = Object.fromEntries(enums.map((e) => [e.dbName ?? e.name, e.values.map((v) => v.dbName ?? v.name)]));
    expect(actual).toEqual(expected);
  });

  it.each(models.map((m) => [tableOf(m), m] as const))('%s: columns, types, nullability and defaults', async (table, model) => {
    const { rows } = await client.query(
      `SELECT column_name, data_type, udt_name, is_nullable, character_maximum_length, datetime_precision, column_default
         FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
      [table],
    );
    const scalar = model.fields.filter((f) => f.kind !== 'object');
    expect(rows.map((r) => r.column_name).sort()).toEqual(scalar.map((f) => f.dbName ?? f.name).sort());
    for (const f of scalar) {
      const column = f.dbName ?? f.name;
      const row = rows.find((r) => r.column_name === column);
      const type = expectedType(f);
      const actual = {
        column,
        data_type: row.data_type,
        nullable: row.is_nullable === 'YES',
        default: row.column_default,
        ...(type.udt_name ? { udt_name: row.udt_name } : {}),
        ...(type.length ? { length: row.character_maximum_length } : {}),
        ...(type.precision !== undefined ? { precision: row.datetime_precision } : {}),
      };
      expect(actual).toEqual({
        column,
        data_type: type.data_type,
        nullable: !f.isRequired,
        default: expectedDefault(f, table, column),
        ...(type.udt_name ? { udt_name: type.udt_name } : {}),
        ...(type.length ? { length: type.length } : {}),
        ...(type.precision !== undefined ? { precision: type.precision } : {}),
      });
    }
  });

  it('has exactly the schema\'s primary keys, unique and plain indexes, column order and sort order included', async () => {
    const { rows } = await client.query<{ table: string; name: string; unique: boolean; primary: boolean; columns: string[]; desc: boolean[]; partial: boolean }>(
      `SELECT t.relname AS table, i.relname AS name, x.indisunique AS unique, x.indisprimary AS primary,
              (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(x.indkey) WITH ORDINALITY k(attnum, n)
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)::text[] AS columns,
              (SELECT array_agg((o.opt & 1) = 1 ORDER BY o.n) FROM unnest(x.indoption) WITH ORDINALITY o(opt, n)) AS desc,
              x.indpred IS NOT NULL AS partial
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace s ON s.oid = t.relnamespace
        WHERE s.nspname = 'public' AND t.relname <> '_prisma_migrations'`,
    );
    const actual = rows.map((r) => ({ table: r.table, name: r.name, unique: r.unique, primary: r.primary, columns: r.columns, desc: r.desc })).sort((a, b) => a.name.localeCompare(b.name));
    const expected = indexes
      .map((ix) => {
        const model = modelByName.get(ix.model) as DmmfModel;
        const table = tableOf(model);
        const columns = ix.fields.map((f) => columnOf(model, f.name));
        const suffix = ix.type === 'id' ? 'pkey' : ix.type === 'unique' ? 'key' : 'idx';
        const name = ix.dbName ?? (ix.type === 'id' ? `${table}_pkey` : `${table}_${columns.join('_')}_${suffix}`);
        return { table, name, unique: ix.type !== 'normal', primary: ix.type === 'id', columns, desc: ix.fields.map((f) => f.sortOrder === 'desc') };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(actual).toEqual(expected);

    // Partial indexes: exactly those whose schema attribute has a `where:`, with that predicate.
    const schemaText = fs.readFileSync(path.resolve(MIGRATIONS_DIR, '../schema.prisma'), 'utf8');
    const partialInSchema = [...schemaText.matchAll(/where:.*map: "([^"]+)"/g)].map((m) => m[1]).sort();
    expect(rows.filter((r) => r.partial).map((r) => r.name).sort()).toEqual(partialInSchema);
    const { rows: preds } = await client.query<{ name: string; predicate: string }>(
      `SELECT i.relname AS name, pg_get_expr(x.indpred, x.indrelid) AS predicate
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indpred IS NOT NULL`,
    );
    expect(Object.fromEntries(preds.map((p) => [p.name, p.predicate]))).toEqual({
      accounts_max_running_idx: '(max_running IS NOT NULL)',
      api_keys_one_active_key_per_grant: '(revoked_at IS NULL)',
      tasks_retention_idx: '((status = ANY (ARRAY[20, 30, 40])) AND (files_expired_at IS NULL))',
      tasks_not_finished_idx: '(finished_at IS NULL)',
      tasks_expiry_idx: '((status = 0) AND (expires_at IS NOT NULL) AND (started_at IS NULL))',
      tasks_fairness_key_idx: '(fairness_key IS NOT NULL)',
      webhook_deliveries_due_idx: '(next_attempt_at IS NOT NULL)',
    });
  });

  it('has exactly the schema\'s foreign keys with their referential actions', async () => {
    const { rows } = await client.query<{ name: string; table: string; columns: string[]; ref_table: string; ref_columns: string[]; on_delete: string; on_update: string }>(
      `SELECT c.conname AS name, t.relname AS table, r.relname AS ref_table, c.confdeltype AS on_delete, c.confupdtype AS on_update,
              (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum)::text[] AS columns,
              (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, n)
                 JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum)::text[] AS ref_columns
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
        WHERE c.contype = 'f'`,
    );
    const expected = models
      .flatMap((m) =>
        m.fields
          .filter((f) => f.kind === 'object' && f.relationFromFields && f.relationFromFields.length > 0)
          .map((f) => {
            const target = modelByName.get(f.type) as DmmfModel;
            const columns = (f.relationFromFields ?? []).map((c) => columnOf(m, c));
            return {
              name: `${tableOf(m)}_${columns.join('_')}_fkey`,
              table: tableOf(m),
              columns,
              ref_table: tableOf(target),
              ref_columns: (f.relationToFields ?? []).map((c) => columnOf(target, c)),
              on_delete: ON_DELETE[f.relationOnDelete ?? (f.isRequired ? 'Restrict' : 'SetNull')],
              on_update: 'c',
            };
          }),
      )
      .sort((a, b) => a.name.localeCompare(b.name));
    expect([...rows].sort((a, b) => a.name.localeCompare(b.name))).toEqual(expected);
  });

  it('has exactly the documented SQL-only CHECK constraints', async () => {
    const { rows } = await client.query<{ table: string; name: string }>(
      `SELECT t.relname AS table, c.conname AS name FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        JOIN pg_namespace s ON s.oid = t.relnamespace WHERE c.contype = 'c' AND s.nspname = 'public'`,
    );
    expect(rows.map((r) => `${r.table}.${r.name}`).sort()).toEqual(SQL_ONLY_CONSTRAINTS.map((c) => `${c.table}.${c.name}`).sort());
  });

  it('has exactly the documented SQL-only functions', async () => {
    const { rows } = await client.query<{ proname: string }>(
      "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'",
    );
    expect(rows.map((r) => r.proname).sort()).toEqual([...SQL_ONLY_FUNCTIONS].sort());
  });

  // A function's source is its file in prisma/functions; migrations carry copies of it.
  const FUNCTIONS_DIR = path.resolve(MIGRATIONS_DIR, '../functions');
  const sourceOf = (name: string) => fs.readFileSync(path.join(FUNCTIONS_DIR, `${name}.sql`), 'utf8').replace(/^(--.*\n|\s*\n)*/, '').trim();

  it('keeps each SQL-only function as source, one file each in prisma/functions', () => {
    expect(fs.readdirSync(FUNCTIONS_DIR).sort()).toEqual(SQL_ONLY_FUNCTIONS.map((name) => `${name}.sql`).sort());
  });

  it.each(SQL_ONLY_FUNCTIONS.map((name) => [name]))('the latest migration defining %s defines exactly its source file', (name) => {
    const definitions = listMigrations().flatMap((m) => functionDefinitions(m.sql).filter((d) => d.name === name).map((d) => ({ ...d, migration: m.name })));
    expect(definitions.length).toBeGreaterThan(0);
    const latest = definitions.at(-1);
    expect({ migration: latest?.migration, statement: latest?.statement }).toEqual({ migration: latest?.migration, statement: sourceOf(name) });
  });

  it.each(SQL_ONLY_FUNCTIONS.map((name) => [name]))('the migrated database runs the body of prisma/functions/%s.sql', async (name) => {
    const { rows } = await client.query<{ prosrc: string }>(
      "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.proname = $1",
      [name],
    );
    expect(rows.map((r) => r.prosrc)).toEqual(functionDefinitions(sourceOf(name)).map((d) => d.body));
  });

  it('the CHECK constraints hold', async () => {
    const acct = `acct_check_${Date.now()}`;
    await client.query("INSERT INTO accounts (id, email, password_hash, webhook_secret_ciphertext) VALUES ($1, $2, 'x', 'x')", [acct, `${acct}@example.test`]);
    const refused = async (sql: string, params: unknown[], constraint: string) => {
      await expect(client.query(sql, params)).rejects.toThrow(constraint);
    };
    await refused('UPDATE accounts SET paid_balance = -1 WHERE id = $1', [acct], 'accounts_paid_balance_non_negative');
    await refused("UPDATE accounts SET email = 'UPPER@EXAMPLE.TEST' WHERE id = $1", [acct], 'accounts_email_lower_case');
    await refused("INSERT INTO trial_grants (id, account_id, quota_total, quota_remaining, expires_at) VALUES ('g1', $1, 5, 6, now())", [acct], 'trial_grants_quota_remaining_in_range');
    await refused("INSERT INTO trial_grants (id, account_id, quota_total, quota_remaining, expires_at) VALUES ('g2', $1, 0, 0, now())", [acct], 'trial_grants_quota_total_positive');
    await refused(
      "INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix) VALUES ('k1', $1, 'trial', repeat('a', 64), 'x', 'sk-test-x')",
      [acct],
      'api_keys_grant_matches_type',
    );
    await refused("INSERT INTO credit_ledger (account_id, entry_type, amount) VALUES ($1, 'topup', -5)", [acct], 'credit_ledger_amount_sign');
    await refused("INSERT INTO credit_ledger (account_id, entry_type, amount) VALUES ($1, 'refund', 5)", [acct], 'credit_ledger_task_entries_have_task');
    const key = `key_${acct}`;
    await client.query("INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix) VALUES ($2, $1, 'paid', repeat('c', 64), 'x', 'sk-live-x')", [acct, key]);
    const steering = (column: string, value: unknown, constraint: string) =>
      refused(
        `INSERT INTO tasks (public_id, account_id, api_key_id, kind, input, cost, ${column}) VALUES ($3, $1, $2, 'image-generation', '{}', 1, $4)`,
        [acct, key, `task_${acct}_${column}`, value],
        constraint,
      );
    await steering('priority', 86_401, 'tasks_priority_in_range');
    await steering('ttl_seconds', 0, 'tasks_ttl_in_range');
    await steering('fairness_key', 'has space', 'tasks_fairness_key_format');
    await client.query('DELETE FROM api_keys WHERE id = $1', [key]);
    await client.query('DELETE FROM accounts WHERE id = $1', [acct]);
  });
});

describe('the offline migration runner', () => {
  const scratch: string[] = [];
  const admin = new URL(TEST_DATABASE_URL);
  admin.pathname = '/postgres';

  async function scratchDatabase(): Promise<string> {
    const name = `taskapi_migrate_${process.pid}_${scratch.length}_${Date.now()}`;
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    scratch.push(name);
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${name}`;
    return url.toString();
  }

  async function rows(url: string) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query('SELECT * FROM _prisma_migrations ORDER BY started_at')).rows;
    } finally {
      await c.end();
    }
  }

  function migrationsCopy(extra: Record<string, string> = {}, edit?: (sql: string) => string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-migrations-'));
    for (const m of listMigrations()) {
      fs.mkdirSync(path.join(dir, m.name));
      fs.writeFileSync(path.join(dir, m.name, 'migration.sql'), edit ? edit(m.sql) : m.sql);
    }
    for (const [name, sql] of Object.entries(extra)) {
      fs.mkdirSync(path.join(dir, name));
      fs.writeFileSync(path.join(dir, name, 'migration.sql'), sql);
    }
    return dir;
  }

  afterAll(async () => {
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    for (const name of scratch) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });

  it('records each migration the way `prisma migrate deploy` does, and is idempotent', async () => {
    const url = await scratchDatabase();
    const first = await applyMigrations(url);
    expect(first.applied).toEqual(listMigrations().map((m) => m.name));
    const recorded = await rows(url);
    expect(recorded).toHaveLength(first.applied.length);
    for (const [i, m] of listMigrations().entries()) {
      const r = recorded[i];
      expect(r.migration_name).toBe(m.name);
      expect(r.checksum).toBe(createHash('sha256').update(fs.readFileSync(path.join(MIGRATIONS_DIR, m.name, 'migration.sql'))).digest('hex'));
      expect(r.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.finished_at).toBeInstanceOf(Date);
      expect(r.rolled_back_at).toBeNull();
      expect(r.applied_steps_count).toBe(1);
    }
    const second = await applyMigrations(url);
    expect(second).toEqual({ applied: [], alreadyApplied: first.applied });
  });

  it('takes a reworded migration applied with its earlier checksum, and records the new one; any other checksum is still refused', async () => {
    const url = await scratchDatabase();
    await applyMigrations(url);
    const [name, [earlier]] = Object.entries(REWORDED_MIGRATIONS)[0]!;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const setChecksum = (checksum: string) => c.query('UPDATE "_prisma_migrations" SET checksum = $2 WHERE migration_name = $1', [name, checksum]);
      await setChecksum(earlier!);
      const lines: string[] = [];
      expect((await applyMigrations(url, { log: (l) => lines.push(l) })).applied).toEqual([]);
      expect(lines).toEqual([`migration ${name}: reworded comment, checksum updated`]);
      expect((await rows(url)).find((r) => r.migration_name === name).checksum).toBe(listMigrations().find((m) => m.name === name)!.checksum);
      await setChecksum('0'.repeat(64));
      await expect(applyMigrations(url)).rejects.toThrow(/was edited after it was applied/);
    } finally {
      await c.end();
    }
  });

  it('is safe when several processes migrate at once', async () => {
    const url = await scratchDatabase();
    const results = await Promise.all([applyMigrations(url), applyMigrations(url), applyMigrations(url)]);
    expect(results.flatMap((r) => r.applied)).toEqual(listMigrations().map((m) => m.name));
    expect(await rows(url)).toHaveLength(listMigrations().length);
  });

  it('applies only new migrations, refuses edited ones, and stops at a failed one without partial changes', async () => {
    const url = await scratchDatabase();
    await applyMigrations(url);

    const withExtra = migrationsCopy({ '29990101000000_extra': 'CREATE TABLE extra_table (id INTEGER);' });
    expect((await applyMigrations(url, { dir: withExtra })).applied).toEqual(['29990101000000_extra']);

    const edited = migrationsCopy({ '29990101000000_extra': 'CREATE TABLE extra_table (id INTEGER);' }, (sql) => `${sql}\n-- edited\n`);
    await expect(applyMigrations(url, { dir: edited })).rejects.toThrow(/was edited after it was applied/);

    const broken = migrationsCopy({
      '29990101000000_extra': 'CREATE TABLE extra_table (id INTEGER);',
      '29990101000001_broken': 'CREATE TABLE half_done (id INTEGER);\nSELECT * FROM no_such_table;',
    });
    await expect(applyMigrations(url, { dir: broken })).rejects.toThrow(/29990101000001_broken failed/);
    const failed = (await rows(url)).find((r) => r.migration_name === '29990101000001_broken');
    expect(failed.finished_at).toBeNull();
    expect(failed.logs).toContain('no_such_table');
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    expect((await c.query("SELECT to_regclass('public.half_done') AS t")).rows[0].t).toBeNull();
    await c.end();
    await expect(applyMigrations(url, { dir: broken })).rejects.toThrow(/failed earlier and must be resolved/);
  });
});
