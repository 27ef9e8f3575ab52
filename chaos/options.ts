// Command line of `npm run chaos`: the mode (full or --short), the seed and optional overrides.

/** What the chaos monkey does to the stack. */
export type ChaosKind = 'kill-worker' | 'kill-dispatcher' | 'kill-api' | 'redis-restart' | 'postgres-restart' | 'redis-failover' | 'postgres-switch';

/** The failovers: a new primary takes over, and the run measures how long full service takes to return. */
export const FAILOVERS: ReadonlySet<ChaosKind> = new Set(['redis-failover', 'postgres-switch']);

export interface ChaosOptions {
  mode: 'full' | 'short';
  /** Seeds the schedule and the task mix; printed so a run can be replayed. */
  seed: number;
  /** Tasks the clients create. */
  tasks: number;
  /** Concurrent clients. */
  clients: number;
  /** Creations and chaos events are spread over this many milliseconds. */
  windowMs: number;
  /** After the window: how long the system may take to finish every task and delivery. */
  settleMs: number;
  /** How many times each chaos event happens during the window. */
  events: Record<ChaosKind, number>;
}

const FULL: Omit<ChaosOptions, 'seed'> = {
  mode: 'full',
  tasks: 2000,
  clients: 8,
  windowMs: 200_000,
  settleMs: 180_000,
  events: { 'kill-worker': 5, 'kill-dispatcher': 3, 'kill-api': 4, 'redis-restart': 2, 'postgres-restart': 2, 'redis-failover': 2, 'postgres-switch': 2 },
};

// About two minutes on two cores, build included: a 50 s window, then up to ~100 s to settle
// (a delivery in flight when the dispatcher died waits for its 30 s job lock to expire).
const SHORT: Omit<ChaosOptions, 'seed'> = {
  mode: 'short',
  tasks: 360,
  clients: 6,
  windowMs: 50_000,
  settleMs: 100_000,
  events: { 'kill-worker': 2, 'kill-dispatcher': 2, 'kill-api': 2, 'redis-restart': 1, 'postgres-restart': 1, 'redis-failover': 1, 'postgres-switch': 1 },
};

export const USAGE = `Usage: npm run chaos [-- --short] [--seed N] [--tasks N]

  --short     a few hundred tasks, under three minutes (what CI runs)
  --seed N    replay a run's schedule and task mix (every run prints its seed)
  --tasks N   create N tasks instead of the mode's default`;

function wholeNumber(flag: string, text: string | undefined): number {
  if (text === undefined || !/^\d+$/.test(text)) throw new Error(`${flag} needs a whole number\n\n${USAGE}`);
  return Number(text);
}

export function parseOptions(argv: readonly string[]): ChaosOptions {
  let mode: ChaosOptions['mode'] = 'full';
  let seed = Math.floor(Math.random() * 2 ** 31);
  let tasks: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split('=', 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    if (flag === '--short') mode = 'short';
    else if (flag === '--seed') seed = wholeNumber(flag, value());
    else if (flag === '--tasks') tasks = wholeNumber(flag, value());
    else if (flag === '--help' || flag === '-h') throw new Error(USAGE);
    else throw new Error(`unknown argument ${argv[i]}\n\n${USAGE}`);
  }
  const base = mode === 'short' ? SHORT : FULL;
  return { ...base, seed, tasks: tasks ?? base.tasks };
}
