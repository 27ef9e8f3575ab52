// `npx tsx bench/usage-plans.ts`: the usage query (services/api/src/domain/usage.ts) on a million
// tasks, for docs/api.md ("Usage"): EXPLAIN (ANALYZE, BUFFERS) for each grouping, over 30 and 366
// days, for the busy account of bench/large-database.ts's seed (100,000 tasks in its last 30 days)
// and an ordinary one (100 tasks), median of 7 runs each; then the busy account's query without
// the index (dropped in a transaction rolled back). Not part of `npm run bench`: a minute of seeding
// for one page of the docs. `--keep` keeps the database (BENCH_USAGE_DATABASE_URL) for a second look
// with `--no-seed`.
import pg from 'pg';
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { recreateDatabase, testEnv } from '@taskapi/testing';
import { createAccount } from '../services/api/src/domain/accounts';
import { createKey } from '../services/api/src/domain/api-keys';
import { createRepositories } from '../services/api/src/repositories';
import { USAGE } from '../services/api/src/repositories/tasks';
import { seedTasks } from './large-database';

const URL = process.env.BENCH_USAGE_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_bench_usage';
const DAY_MS = 86_400_000;
const RUNS = 7;

async function seed(): Promise<void> {
  await recreateDatabase(URL);
  const config = loadConfig(testEnv({ DATABASE_URL: URL }));
  const db = createDatabase({ url: URL, poolSize: 2 });
  try {
    const repos = createRepositories(db);
    const account = await createAccount(repos, config.secretsKey, { email: 'usage@example.test', password: 'usage password', credits: 1000 });
    await createKey({ keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey }, account.account_id, { type: 'paid' });
    const started = Date.now();
    await seedTasks(URL, account.account_id, 1_000_000);
    console.log(`Seeded 1,000,000 tasks in ${((Date.now() - started) / 1000).toFixed(0)} s.`);
  } finally {
    await db.close();
  }
}

async function main(): Promise<void> {
  if (!process.argv.includes('--no-seed')) await seed();
  const client = new pg.Client({ connectionString: URL });
  await client.connect();
  try {
    const busy = (await client.query<{ id: string }>("SELECT id FROM accounts WHERE email = 'usage@example.test'")).rows[0]!.id;
    // Seeded account 2 (account 1's share of the rows goes to the busy account).
    const ordinary = `acct_seed${'2'.padStart(17, '0')}`;
    const now = new Date();
    const tomorrow = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + DAY_MS;
    console.log((await client.query<{ version: string }>('SELECT version()')).rows[0]!.version);
    for (const [who, account] of [['busy account', busy], ['ordinary account', ordinary]] as const) {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE account_id = $1', [account]);
      for (const days of [30, 366]) {
        for (const [group, byDay, byKey] of [['day', true, false], ['kind', false, false], ['key', false, true]] as const) {
          const times: number[] = [];
          let plan = '';
          for (let i = 0; i < RUNS; i++) {
            const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${USAGE.text}`, [account, new Date(tomorrow - days * DAY_MS), new Date(tomorrow), byDay, byKey]);
            plan = result.rows.map((r) => r['QUERY PLAN']).join('\n');
            times.push(Number(/Execution Time: ([\d.]+)/.exec(plan)![1]));
          }
          times.sort((a, b) => a - b);
          console.log(`\n-- ${who} (${rows[0]!.n} tasks), ${days} days, group_by=${group}: median ${times[RUNS >> 1]} ms (${times[0]}–${times[RUNS - 1]})`);
          if (who === 'busy account' && days === 30) console.log(plan);
        }
      }
    }
    await client.query('BEGIN');
    await client.query('DROP INDEX tasks_usage_by_key_idx');
    const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${USAGE.text}`, [busy, new Date(tomorrow - 30 * DAY_MS), new Date(tomorrow), true, false]);
    console.log(`\n-- without tasks_usage_by_key_idx: busy account, 30 days, group_by=day\n${result.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
    await client.query('ROLLBACK');
  } finally {
    await client.end();
  }
  if (!process.argv.includes('--keep')) {
    const admin = new pg.Client({ connectionString: URL.replace(/\/[^/]*$/, '/postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${new globalThis.URL(URL).pathname.slice(1)}" WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
