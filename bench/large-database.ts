// A bench database with a million tasks, and the query plans of the API's hot statements on it.
//
// Seeded with generate_series in a few statements (under a minute on the 2-core machine): SEED_ACCOUNTS
// accounts with one key each own 90 % of the tasks, and the hot account (the bench key's, made by
// the domain code like any account) owns the other 10 %, interleaved with everyone else's so its
// rows are spread over the whole table as a busy customer's would be. Each task has its charge in
// the ledger, a tenth of the hot account's tasks an Idempotency-Key record. Secondary indexes are
// dropped for the load and rebuilt from their own definitions afterwards (a sorted build instead of
// a million random inserts), foreign-key triggers are off for the load (the rows are consistent by
// construction), then VACUUM ANALYZE, as autovacuum would have left a table that size.
import pg from 'pg';

export const SEED_ACCOUNTS = 10_000;

/**
 * Fills `url` (migrated, with the hot account and its key) with `tasks` tasks over `accounts` more
 * accounts and the hot one. The bench's "empty" database gets the same rows in miniature (1,000
 * tasks), so that both answer reads and lists of tasks of the same shape (finished, with a file).
 */
export async function seedTasks(url: string, hotAccountId: string, tasks: number, accounts = SEED_ACCOUNTS): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: keys } = await client.query<{ id: string }>('SELECT id FROM api_keys WHERE account_id = $1', [hotAccountId]);
    const hotKeyId = keys[0]?.id;
    if (!hotKeyId) throw new Error('the hot account has no key');
    await client.query("SET maintenance_work_mem = '256MB'");
    await client.query('SET session_replication_role = replica');
    const indexes = await dropSecondaryIndexes(client, ['tasks', 'credit_ledger', 'idempotency_keys']);

    await client.query(
      `INSERT INTO accounts (id, email, password_hash, paid_balance, webhook_secret_ciphertext)
       SELECT 'acct_seed' || lpad(a::text, 17, '0'), 'seed' || a || '@example.test', 'not a password hash', 1000000, 'none'
         FROM generate_series(1, $1) a`,
      [accounts],
    );
    await client.query(
      `INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix)
       SELECT 'key_seed' || lpad(a::text, 18, '0'), 'acct_seed' || lpad(a::text, 17, '0'), 'paid',
              encode(sha256(('seed key ' || a)::bytea), 'hex'), 'none', 'tk_seed'
         FROM generate_series(1, $1) a`,
      [accounts],
    );
    // Every tenth task is the hot account's; the rest cycle through the seeded accounts. Created
    // over the last ~29 days, oldest first; 95 % completed, 4 % failed, 1 % cancelled.
    await client.query(
      `INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, error_code, input, payload, callback_url, cost,
                          result, files, attempts, created_at, started_at, finished_at)
       SELECT 'task_' || substr(md5('seed task ' || i), 1, 22),
              CASE WHEN i % 10 = 0 THEN $2 ELSE 'acct_seed' || lpad((1 + i % $3)::text, 17, '0') END,
              CASE WHEN i % 10 = 0 THEN $4 ELSE 'key_seed' || lpad((1 + i % $3)::text, 18, '0') END,
              'image-generation',
              CASE WHEN i % 100 = 1 THEN 40 WHEN i % 25 = 2 THEN 30 ELSE 20 END,
              CASE WHEN i % 25 = 2 AND i % 100 <> 1 THEN 'engine_error' END,
              json_build_object('prompt', 'seeded task ' || i, 'width', 64, 'height', 64),
              CASE WHEN i % 3 = 0 THEN json_build_object('order', i) END,
              CASE WHEN i % 2 = 0 THEN 'https://hooks.example.test/task-api' END,
              1,
              NULL,
              CASE WHEN i % 25 = 2 OR i % 100 = 1 THEN '[]'::jsonb
                   ELSE jsonb_build_array(jsonb_build_object('name', 'image.png', 'content_type', 'image/png', 'size', 180)) END,
              1,
              now() - ($1 - i) * interval '2.5 seconds',
              now() - ($1 - i) * interval '2.5 seconds' + interval '20 milliseconds',
              now() - ($1 - i) * interval '2.5 seconds' + interval '80 milliseconds'
         FROM generate_series(1, $1) i`,
      [tasks, hotAccountId, accounts, hotKeyId],
    );
    await client.query(
      `INSERT INTO credit_ledger (account_id, task_id, entry_type, amount, created_at)
       SELECT account_id, id, 'charge', -cost, created_at FROM tasks`,
    );
    await client.query(
      `INSERT INTO idempotency_keys (account_id, key, fingerprint, task_id, created_at)
       SELECT account_id, 'seed-' || id, repeat('0', 64), id, created_at FROM tasks WHERE account_id = $1 AND id % 10 = 0`,
      [hotAccountId],
    );
    await client.query('SET session_replication_role = DEFAULT');
    for (const definition of indexes) await client.query(definition);
    await client.query('VACUUM ANALYZE');
  } finally {
    await client.end();
  }
}

/** Drops every index of `tables` that backs no constraint; returns their definitions, to rebuild. */
async function dropSecondaryIndexes(client: pg.Client, tables: string[]): Promise<string[]> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i
      WHERE i.indrelid = ANY($1::regclass[])
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
    [tables],
  );
  for (const r of rows) await client.query(`DROP INDEX ${r.name}`);
  return rows.map((r) => r.definition);
}

/** A hot-account task near the middle of its tasks (by internal id): what read and list aim at. */
export async function middleTaskOf(url: string, accountId: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ public_id: string }>(
      `SELECT public_id FROM tasks WHERE account_id = $1 ORDER BY id DESC
        OFFSET (SELECT count(*) / 2 FROM tasks WHERE account_id = $1) LIMIT 1`,
      [accountId],
    );
    if (!rows[0]) throw new Error('the account has no task');
    return rows[0].public_id;
  } finally {
    await client.end();
  }
}

/**
 * The hot statements, as the API's repositories send them (services/api/src/repositories: tasks.ts,
 * idempotency.ts, keys.ts; kept in step by hand), each with the arguments of a real request of
 * the hot account. Rate limits are counted in Redis, not PostgreSQL: no statement of theirs.
 */
const TASK_COLUMNS = `id, public_id, kind, status, error_code, error_message, input::text AS input, payload::text AS payload,
  callback_url, cost, created_at, started_at, finished_at, result::text AS result, files::text AS files, files_expired_at`;

interface HotStatement {
  name: string;
  text: string;
  values: (ctx: PlanContext) => unknown[];
}

interface PlanContext {
  accountId: string;
  keyId: string;
  publicId: string;
  cursorId: string;
  keyHash: string;
}

const HOT_STATEMENTS: HotStatement[] = [
  {
    name: 'read by id (GET /api/tasks/{id})',
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE public_id = $1 AND account_id = $2`,
    values: (c) => [c.publicId, c.accountId],
  },
  {
    name: 'list: the cursor task (GET /api/tasks?cursor=…)',
    text: 'SELECT id FROM tasks WHERE public_id = $1 AND account_id = $2',
    values: (c) => [c.publicId, c.accountId],
  },
  {
    name: 'list: the page after the cursor',
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
    values: (c) => [c.accountId, c.cursorId, 21],
  },
  {
    name: 'list: the first page',
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE account_id = $1 ORDER BY id DESC LIMIT $2`,
    values: (c) => [c.accountId, 21],
  },
  {
    name: 'Idempotency-Key lookup',
    text: `SELECT fingerprint, task_id FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'`,
    values: (c) => [c.accountId, 'bench-absent-key'],
  },
  {
    name: 'API key by hash (key-cache miss)',
    text: `SELECT k.id, k.revoked_at, a.api_version FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`,
    values: (c) => [c.keyHash],
  },
];

/**
 * EXPLAIN ANALYZE of each hot statement on `url`, as a prepared statement after six executions
 * (PostgreSQL then decides between the custom and the generic plan, as it does for the API's
 * named statements), and of the statements inside `create_tasks` (through auto_explain's nested
 * statements, in a transaction rolled back afterwards).
 */
export async function hotStatementPlans(url: string, accountId: string, publicId: string): Promise<Array<{ name: string; plan: string }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: ids } = await client.query<{ id: string }>('SELECT id FROM tasks WHERE public_id = $1', [publicId]);
    const { rows: keys } = await client.query<{ id: string; key_hash: string }>('SELECT id, key_hash FROM api_keys WHERE account_id = $1 LIMIT 1', [accountId]);
    const ctx: PlanContext = { accountId, keyId: keys[0]!.id, publicId, cursorId: ids[0]!.id, keyHash: keys[0]!.key_hash };
    const plans: Array<{ name: string; plan: string }> = [];
    for (const [i, s] of HOT_STATEMENTS.entries()) {
      const values = s.values(ctx);
      await client.query(`PREPARE bench_plan_${i} AS ${s.text}`);
      for (let run = 0; run < 6; run++) await client.query(`EXECUTE bench_plan_${i}(${literalList(values)})`);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) EXECUTE bench_plan_${i}(${literalList(values)})`);
      plans.push({ name: s.name, plan: rows.map((r) => r['QUERY PLAN']).join('\n') });
    }
    plans.push({ name: 'create_tasks(): statements inside the function (one creation)', plan: await createTasksPlan(client, ctx) });
    return plans;
  } finally {
    await client.end();
  }
}

function literalList(values: unknown[]): string {
  return values.map((v) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`)).join(', ');
}

/** The plans of create_tasks' inner statements, from auto_explain (LOG messages sent to this client). */
async function createTasksPlan(client: pg.Client, ctx: PlanContext): Promise<string> {
  const notices: string[] = [];
  const onNotice = (n: { message?: string }) => notices.push(n.message ?? '');
  client.on('notice', onNotice);
  try {
    await client.query('BEGIN');
    await client.query("LOAD 'auto_explain'");
    await client.query('SET LOCAL auto_explain.log_min_duration = 0');
    await client.query('SET LOCAL auto_explain.log_analyze = on');
    await client.query('SET LOCAL auto_explain.log_nested_statements = on');
    await client.query('SET LOCAL auto_explain.log_timing = on');
    await client.query('SET LOCAL client_min_messages = log');
    await client.query(
      `SELECT ordinal, task_id FROM create_tasks($1, NULL, ARRAY['task_benchplan0000000000000']::text[], ARRAY[$2]::text[],
              ARRAY['image-generation']::task_kind[], ARRAY['{"prompt":"plan"}']::json[], ARRAY[NULL]::json[], ARRAY[NULL]::text[],
              ARRAY[1]::int[], ARRAY[NULL]::text[], ARRAY[NULL]::bytea[])`,
      [ctx.accountId, ctx.keyId],
    );
  } finally {
    await client.query('ROLLBACK');
    client.off('notice', onNotice);
  }
  // Each message: "duration: … ms  plan:\nQuery Text: …\n<plan>"; the outer SELECT is left out.
  return notices
    .filter((m) => m.includes('plan:') && !m.includes('FROM create_tasks('))
    .map((m) => {
      const q = /Query Text: ([\s\S]*?)\n(?=\S)/.exec(m);
      const text = q?.[1]?.replace(/\s+/g, ' ').trim() ?? '';
      const plan = (q ? m.slice(q.index + q[0].length) : m).replace(/ {2}\(cost=[^)]*\)/g, '');
      return `-- ${text.slice(0, 100)}${text.length > 100 ? '…' : ''}\n${plan}`;
    })
    .join('\n');
}
