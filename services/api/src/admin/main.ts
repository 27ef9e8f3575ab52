// Operator CLI: `npm run admin -- <command> [options]`. Prints one JSON object on stdout; on bad
// input prints a message on stderr and exits non-zero (2: usage, 1: refused or failed).
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '@taskapi/config';
import { MAX_ACCOUNT_CAP } from '@taskapi/scheduler';
import { createDatabase } from '@taskapi/db';
import { createFileStore } from '@taskapi/file-store';
import { createLogger } from '@taskapi/logger';
import { createRedisClient } from '@taskapi/service';
import { schedulerFigures } from '@taskapi/task-lifecycle';
import { isTaskKind, TASK_KINDS } from '@taskapi/task-kinds';
import { addCredits, createAccount, grantTrial, setMaxRunning } from '../domain/accounts';
import { moveInputsToStore } from '../domain/move-inputs-to-store';
import { queueReport } from '../domain/queue-report';
import { createRepositories, type Repositories } from '../repositories';

const USAGE = `Usage: npm run admin -- <command> [options]

Commands:
  create-account --email E --password P [--credits N]
  add-credits    --email E --amount N
  grant-trial    --email E --quota N (--expires-in-days D | --expires-at ISO8601)
  set-max-running --email E (--max N | --reset)
                 the account's own cap of running tasks (1 to 10000), or back to
                 ACCOUNT_MAX_RUNNING → {"account_id","max_running"}; workers apply it
                 within seconds
  move-inputs-to-store   copy uploaded images still held in PostgreSQL to the file store
                         (run once every worker runs this release) → {"moved"}
  queues [--kind K]      what runs and what waits in the scheduler, per kind and account
                         → {"kinds":{"<kind>":{"running","waiting","accounts":[...]}}}`;

class UsageError extends Error {}

function wholeNumber(name: string, value: string | undefined, min: number): number {
  if (value === undefined) throw new UsageError(`--${name} is required`);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
    throw new UsageError(`--${name} must be a whole number of at least ${min}`);
  }
  return Number(value);
}

function required(name: string, value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

const OPTIONS = {
  email: { type: 'string' },
  password: { type: 'string' },
  credits: { type: 'string' },
  amount: { type: 'string' },
  quota: { type: 'string' },
  'expires-in-days': { type: 'string' },
  'expires-at': { type: 'string' },
  max: { type: 'string' },
  reset: { type: 'boolean' },
  kind: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ALLOWED: Record<string, ReadonlyArray<keyof typeof OPTIONS>> = {
  'create-account': ['email', 'password', 'credits'],
  'add-credits': ['email', 'amount'],
  'grant-trial': ['email', 'quota', 'expires-in-days', 'expires-at'],
  'set-max-running': ['email', 'max', 'reset'],
  'move-inputs-to-store': [],
  queues: ['kind'],
};

async function run(argv: string[]): Promise<unknown> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return undefined;
  }
  const allowed = ALLOWED[command];
  if (!allowed) throw new UsageError(`unknown command "${command}"`);
  let values: Partial<Record<keyof typeof OPTIONS, string | boolean>>;
  try {
    ({ values } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  for (const name of Object.keys(values)) {
    if (!allowed.includes(name as keyof typeof OPTIONS)) throw new UsageError(`--${name} does not apply to ${command}`);
  }
  const opt = (name: keyof typeof OPTIONS) => values[name] as string | undefined;

  if (command === 'queues') {
    const kind = opt('kind');
    if (kind !== undefined && !isTaskKind(kind)) throw new UsageError(`--kind must be one of ${TASK_KINDS.join(', ')}`);
    const config = loadConfig();
    const logger = createLogger({ service: 'admin', level: 'warn' });
    const redis = createRedisClient(config, { connectionName: 'taskapi-admin', maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    const db = createDatabase({ url: config.databaseUrl, poolSize: 2, applicationName: 'taskapi-admin' });
    try {
      return await queueReport(schedulerFigures(config, redis, logger), createRepositories(db).accounts, kind === undefined ? undefined : [kind]);
    } finally {
      redis.disconnect();
      await db.close();
    }
  }

  if (command === 'move-inputs-to-store') {
    const config = loadConfig();
    const store = createFileStore(config);
    await store.checkWritable();
    const db = createDatabase({ url: config.databaseUrl, poolSize: 2, applicationName: 'taskapi-admin' });
    try {
      return await moveInputsToStore(createRepositories(db).tasks, store);
    } finally {
      await db.close();
    }
  }

  // Validate everything before touching the database.
  let action: (repos: Repositories, secretsKey: Buffer, config: Config) => Promise<unknown>;
  const email = required('email', opt('email'));
  if (command === 'create-account') {
    const password = required('password', opt('password'));
    const credits = opt('credits') === undefined ? 0 : wholeNumber('credits', opt('credits'), 0);
    action = (repos, key) => createAccount(repos, key, { email, password, credits });
  } else if (command === 'add-credits') {
    const amount = wholeNumber('amount', opt('amount'), 1);
    action = (repos) => addCredits(repos, email, amount);
  } else if (command === 'set-max-running') {
    const reset = values.reset === true;
    if ((opt('max') === undefined) === !reset) throw new UsageError('give exactly one of --max or --reset');
    const max = reset ? null : wholeNumber('max', opt('max'), 1);
    if (max !== null && max > MAX_ACCOUNT_CAP) throw new UsageError(`--max must be at most ${MAX_ACCOUNT_CAP}`);
    action = (repos, _key, config) => setMaxRunning(repos, email, max, config.accountMaxRunning);
  } else {
    const quota = wholeNumber('quota', opt('quota'), 1);
    const days = opt('expires-in-days');
    const at = opt('expires-at');
    if ((days === undefined) === (at === undefined)) throw new UsageError('give exactly one of --expires-in-days or --expires-at');
    let expiresAt: Date;
    if (days !== undefined) {
      expiresAt = new Date(Date.now() + wholeNumber('expires-in-days', days, 1) * 86_400_000);
    } else {
      if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(at as string)) {
        throw new UsageError('--expires-at must be an ISO 8601 date or date-time');
      }
      expiresAt = new Date(at as string);
      if (Number.isNaN(expiresAt.getTime())) throw new UsageError('--expires-at is not a valid date');
    }
    action = (repos) => grantTrial(repos, email, quota, expiresAt);
  }

  const config = loadConfig();
  const db = createDatabase({ url: config.databaseUrl, poolSize: 2, applicationName: 'taskapi-admin' });
  try {
    return await action(createRepositories(db), config.secretsKey, config);
  } finally {
    await db.close();
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    if (result !== undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`error: ${message}\n`);
    process.exit(1);
  },
);
