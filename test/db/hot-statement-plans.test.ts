// The per-task and per-delivery statements must reach their row through a unique index however
// stale the table's statistics are. A partial index that was nearly empty at the last ANALYZE
// looks empty to the planner; when a statement's WHERE implies the index's predicate (a worker's
// `status IN (0, 10)` and the old tasks_unfinished_idx), the planner may walk that index with a
// filter instead, reading the whole backlog for every task: exactly during the bursts that build
// a backlog faster than autovacuum analyzes it. This file builds that situation (autovacuum off,
// ANALYZE on a nearly empty table, then a backlog), proves it reproduces the trap with an index of
// the old shape, and checks every hot statement's custom and generic plans.
import pg from 'pg';
import type { SqlExecutor } from '@taskapi/db';
import { TaskStatus } from '@taskapi/domain';
import { TaskRows } from '@taskapi/task-lifecycle';
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { sweepDeliveries } from '../../services/webhook-dispatcher/src/domain/sweep-deliveries';
import { claimAndLoad, claimAttempt, loadDelivery, recordAttempt } from '../../services/webhook-dispatcher/src/repositories/deliveries';

const DATABASE_URL = testDatabaseUrl('plans');
const BACKLOG = 30_000;
const DAY_MS = 86_400_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every (node type, relation, index) of a plan tree. */
function scans(node: PlanNode): Array<{ type: string; relation?: string; index?: string }> {
  return [{ type: node['Node Type'], relation: node['Relation Name'], index: node['Index Name'] }, ...(node.Plans ?? []).flatMap(scans)];
}

let client: pg.Client;
let accountId: string;
/** A queued task and its pending delivery, in the middle of the backlog. */
let task: { id: string; publicId: string };
let deliveryId: string;

/** The statements `fn` sends, each with its values (the statements run in a rolled-back transaction). */
async function statementsOf(fn: (db: SqlExecutor) => Promise<unknown>): Promise<Array<{ text: string; values: unknown[] }>> {
  const seen: Array<{ text: string; values: unknown[] }> = [];
  const recorder: SqlExecutor = {
    query: (config) => {
      seen.push({ text: config.text, values: config.values ?? [] });
      return client.query(config) as never;
    },
  };
  await client.query('BEGIN');
  try {
    await fn(recorder);
  } finally {
    await client.query('ROLLBACK');
  }
  return seen;
}

/** A bound value as a SQL literal of unknown type (as pg sends it: arrays as array literals). */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return client.escapeLiteral(`{${v.map((x) => (x === null ? 'NULL' : JSON.stringify(String(x)))).join(',')}}`);
  return client.escapeLiteral(v instanceof Date ? v.toISOString() : String(v));
}

/** The plan of a statement prepared as the services prepare it, with PostgreSQL's custom or generic plan. */
async function planOf(s: { text: string; values: unknown[] }, mode: 'force_custom_plan' | 'force_generic_plan'): Promise<PlanNode> {
  await client.query(`PREPARE hot AS ${s.text}`);
  try {
    await client.query(`SET plan_cache_mode = ${mode}`);
    const args = s.values.length ? `(${s.values.map(literal).join(', ')})` : '';
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE hot${args}`);
    return rows[0]!['QUERY PLAN'][0]!.Plan;
  } finally {
    await client.query('RESET plan_cache_mode');
    await client.query('DEALLOCATE hot');
  }
}

/** Both plans of every statement `fn` sends, flattened to their scans. */
async function scansOf(fn: (db: SqlExecutor) => Promise<unknown>) {
  const out: Array<{ statement: string; type: string; relation?: string; index?: string }> = [];
  for (const s of await statementsOf(fn)) {
    for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
      for (const scan of scans(await planOf(s, mode))) out.push({ statement: `${mode}: ${s.text.trim().slice(0, 60)}`, ...scan });
    }
  }
  return out;
}

beforeAll(async () => {
  await recreateDatabase(DATABASE_URL);
  client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  // No autovacuum on the tables under test: their statistics stay those of the ANALYZE below.
  for (const table of ['tasks', 'webhook_deliveries', 'webhook_attempts']) await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  accountId = 'acct_plans';
  await client.query(`INSERT INTO accounts (id, email, password_hash, webhook_secret_ciphertext) VALUES ($1, 'plans@example.test', 'x', 'x')`, [accountId]);
  await client.query(`INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix) VALUES ('key_plans', $1, 'paid', repeat('a', 64), 'x', 'sk-live-aaaaaaaa')`, [accountId]);
  const insertTasks = (from: number, to: number, status: number) =>
    client.query(
      `INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, input, callback_url, cost, finished_at)
       SELECT 'task_plans' || n, $1, 'key_plans', 'image-generation', $4::smallint, '{}', 'https://example.test/hook', 1, CASE WHEN $4::smallint >= 20 THEN now() END
         FROM generate_series($2::int, $3::int) n`,
      [accountId, from, to, status],
    );
  const insertDeliveries = (from: number, to: number, state: 'pending' | 'succeeded') =>
    client.query(
      `INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, state, next_attempt_at, completed_at)
       SELECT 'whd_plans' || t.id, t.id, t.account_id, t.callback_url, 20, $3::webhook_delivery_state,
              CASE WHEN $3 = 'pending' THEN now() END, CASE WHEN $3 = 'pending' THEN NULL ELSE now() END FROM tasks t
        WHERE t.public_id IN (SELECT 'task_plans' || n FROM generate_series($1::int, $2::int) n)`,
      [from, to, state],
    );
  // As at the last ANALYZE before a burst, at a quiet moment: finished tasks, delivered webhooks,
  // nothing queued or pending, so the partial indexes were empty.
  await insertTasks(1, 20, TaskStatus.completed);
  await insertDeliveries(1, 20, 'succeeded');
  // Indexes of the old shape: predicates the hot statements imply.
  await client.query('CREATE INDEX old_unfinished_idx ON tasks (created_at) WHERE status IN (0, 10)');
  await client.query(`CREATE INDEX old_pending_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`);
  await client.query('ANALYZE');
  // The burst.
  await insertTasks(21, 20 + BACKLOG, TaskStatus.queued);
  await insertDeliveries(21, 20 + BACKLOG, 'pending');
  const middle = `task_plans${20 + BACKLOG / 2}`;
  const { rows } = await client.query<{ id: string }>('SELECT id::text AS id FROM tasks WHERE public_id = $1', [middle]);
  task = { id: rows[0]!.id, publicId: middle };
  deliveryId = `whd_plans${task.id}`;
}, 120_000);

afterAll(async () => {
  await client?.end();
});

/** The indexes of the old shape (built for the first test only; each other test runs without them). */
async function dropOldShapes(): Promise<void> {
  await client.query('DROP INDEX IF EXISTS old_unfinished_idx');
  await client.query('DROP INDEX IF EXISTS old_pending_idx');
}

/** The partial indexes of the two tables the hot statements write. */
async function partialIndexes(): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      WHERE x.indpred IS NOT NULL AND t.relname IN ('tasks', 'webhook_deliveries')`,
  );
  return rows.map((r) => r.name);
}

describe('hot statements under a backlog the statistics have not seen', () => {
  it('reproduces the trap: with an index of the old shape, the planner walks the backlog', async () => {
    const old = await scansOf((db) => db.query({ text: 'UPDATE tasks SET attempts = attempts + 1 WHERE public_id = $1 AND status IN (0, 10)', values: [task.publicId] }));
    expect(old.map((s) => s.index)).toContain('old_unfinished_idx');
    const oldDelivery = await scansOf((db) => db.query({ text: `UPDATE webhook_deliveries SET attempt_count = 1 WHERE id = $1 AND state = 'pending'`, values: [deliveryId] }));
    expect(oldDelivery.map((s) => s.index)).toContain('old_pending_idx');
    await dropOldShapes();
    expect((await partialIndexes()).sort()).toEqual(['tasks_expiry_idx', 'tasks_fairness_key_idx', 'tasks_not_finished_idx', 'tasks_retention_idx', 'webhook_deliveries_due_idx']);
  });

  const hot: Array<[string, (db: SqlExecutor) => Promise<unknown>]> = [
    ['a worker starts a task', (db) => new TaskRows(db).claim(task.publicId)],
    ['a worker hands a task back', (db) => new TaskRows(db).handBack(task.publicId, 1)],
    ['a worker reads a task status', (db) => new TaskRows(db).status(task.publicId)],
    ['a task is finished (worker, sweeper, cancel)', (db) => new TaskRows(db).finish(task.publicId, null, { status: TaskStatus.completed, result: {} }, 'whd_plans_new')],
    ['a task is cancelled by its owner', (db) => new TaskRows(db).finish(task.publicId, accountId, { status: TaskStatus.cancelled }, 'whd_plans_new')],
    ['tasks are cancelled by their ids (bulk cancel)', (db) => new TaskRows(db).cancelMany(accountId, [task.publicId, 'task_plans_unknown'], [null, null])],
    ['the statuses of a bulk cancel\'s ids are read', (db) => new TaskRows(db).statusesOf(accountId, [task.publicId, 'task_plans_unknown'])],
    ['the dispatcher loads a delivery', (db) => loadDelivery(db, deliveryId)],
    ['the dispatcher claims an attempt', (db) => claimAttempt(db, deliveryId, 1, new Date())],
    ['the dispatcher claims and loads', (db) => claimAndLoad(db, { deliveryId, attempt: 1, accountId, ciphertext: 'x', startedAt: new Date() })],
    [
      'the dispatcher records a result',
      (db) => recordAttempt(db, { deliveryId, attempt: 1, durationMs: 5, statusCode: 204, error: null, responseExcerpt: null, state: 'succeeded', retryInMs: null }),
    ],
  ];

  it.each(hot)('%s: through unique indexes, never a partial index or a scan of the table', async (_name, fn) => {
    await dropOldShapes();
    const partial = await partialIndexes();
    const found = await scansOf(fn);
    expect(found.length).toBeGreaterThan(0);
    expect(found.filter((s) => s.index !== undefined && partial.includes(s.index))).toEqual([]);
    expect(found.filter((s) => s.type === 'Seq Scan' && (s.relation === 'tasks' || s.relation === 'webhook_deliveries'))).toEqual([]);
    const tableScans = found.filter((s) => s.type.endsWith('Scan') && (s.relation === 'tasks' || s.relation === 'webhook_deliveries'));
    expect(tableScans.length).toBeGreaterThan(0);
    for (const s of tableScans) expect([s.statement, s.index]).toEqual([s.statement, expect.stringMatching(/^(tasks_public_id_key|tasks_pkey|webhook_deliveries_pkey)$/)]);
  });

  it('the sweepers still find their rows through their partial indexes', async () => {
    await dropOldShapes();
    // A grace of a day: no row qualifies, so neither queue is touched; only the statement runs.
    const tasks = await scansOf((db) => new TaskRows(db).pendingPage('image-generation', DAY_MS, null, 1000));
    expect(tasks.map((s) => s.index)).toContain('tasks_not_finished_idx');
    const deliveries = await scansOf((db) => sweepDeliveries(db, undefined as never, DAY_MS));
    expect(deliveries.map((s) => s.index)).toContain('webhook_deliveries_due_idx');
  });

  it("the expiry sweep (every replica, twice a second) reads only queued tasks with a deadline: none of the backlog's", async () => {
    await dropOldShapes();
    const expiry = await scansOf((db) => new TaskRows(db).expireDue(500, 'expired'));
    const onTasks = expiry.filter((s) => s.relation === 'tasks' && s.type.endsWith('Scan'));
    expect(onTasks.length).toBeGreaterThan(0);
    for (const s of onTasks) expect([s.statement, s.type, s.index]).toEqual([s.statement, expect.stringMatching(/Index/), expect.stringMatching(/^(tasks_expiry_idx|tasks_pkey)$/)]);
  });

  it("a bulk cancel by filter pages through the account's unfinished tasks by index, a page at a time", async () => {
    await dropOldShapes();
    const pages = await scansOf((db) => new TaskRows(db).cancelCandidates(accountId, { status: 0, fairnessKey: 'user-1' }, task.id, 200, '9000000000'));
    expect(pages.filter((s) => s.type === 'Seq Scan' && s.relation === 'tasks')).toEqual([]);
    expect(pages.filter((s) => s.relation === 'tasks').length).toBeGreaterThan(0);
  });
});
