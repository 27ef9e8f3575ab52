// The scheduler's Redis commands (src/commands/*.lua, one operation a file) as typed calls: each
// encodes its named input into the script's KEYS and ARGV and decodes its JSON reply into named
// fields. This file and the scripts' headers are the only places that know the positions.
import path from 'node:path';
import { commandsFolder, jsonReply, LuaScripts, luaList, type Script } from '@taskapi/redis-scripts';
import { z } from 'zod';
import type { NewTask, WorkerReport } from './task-scheduler';

const scripts = new LuaScripts(commandsFolder(path.join(__dirname, 'commands'), 'scheduler'), 'taskapi_scheduler');

/** What every call carries: where the keys are, the default cap, the kinds. */
export interface SchedulerScope {
  /** Key prefix, with its hash tag. */
  prefix: string;
  defaultCap: number;
  kinds: readonly string[];
}

/** A released run, to be added to its kind's queue. */
const releasedRun = z.object({ kind: z.string(), task: z.string(), account: z.string(), release: z.number(), front: z.boolean() });
export type ReleasedRun = z.output<typeof releasedRun>;

/** The reply of a command that may release work. */
function releasing<A extends z.ZodType>(answer: A): (raw: unknown) => Releasing<z.output<A>> {
  const lists = jsonReply(z.object({ released: luaList(releasedRun), skipped: luaList(z.string()), expired: luaList(z.string()), answer: z.unknown() }));
  return (raw) => {
    const r = lists(raw);
    return { released: r.released, skipped: r.skipped, expired: r.expired, answer: answer.parse(r.answer) };
  };
}
export interface Releasing<A> {
  released: ReleasedRun[];
  /** Entries found corrupt and dropped (the sweeper restores their tasks). */
  skipped: string[];
  /** Pending tasks past their deadline, taken out of their lines instead of released (the expiry sweep expires them). */
  expired: string[];
  answer: A;
}

type Call<T> = { scope: SchedulerScope; report?: WorkerReport | undefined } & T;

const header = (scope: SchedulerScope): Array<string | number> => [scope.prefix, scope.defaultCap, scope.kinds.join(',')];
const tasksKey = (scope: SchedulerScope): string[] => [`${scope.prefix}tasks`];

/** The header, then the report (state.lua's and report.lua's ARGV), then the command's own arguments. */
function withReport(scope: SchedulerScope, report: WorkerReport | undefined, own: ReadonlyArray<string | number>): Array<string | number> {
  if (!report) return [...header(scope), '', '', 0, ...own];
  const idle = Object.entries(report.idle)
    .map(([kind, n]) => `${kind}=${Math.max(0, Math.floor(n ?? 0))}`)
    .join(',');
  const starts = report.started.flatMap((r) => [r.kind, r.publicId, r.accountId, r.order, r.createdAt.getTime(), r.release]);
  return [...header(scope), report.workerId, idle, report.started.length, ...starts, ...own];
}

function releasingCommand<T, A extends z.ZodType>(command: string, own: (input: T) => ReadonlyArray<string | number>, answer: A): Script<Call<T>, Releasing<z.output<A>>> {
  return scripts.define({
    command,
    keys: (input: Call<T>) => tasksKey(input.scope),
    args: (input) => withReport(input.scope, input.report, own(input)),
    reply: releasing(answer),
  });
}

const stateName = z.enum(['pending', 'ready', 'active', 'delayed']);
/** The fairness group of tasks without a key (not a character keys may hold). */
export const NO_GROUP = '*';
/** hand-back and retry: the state the task was in, or why nothing happened. */
const runAnswer = z.union([stateName, z.literal('stale'), z.literal('unknown')]);
const noArgs = (): never[] => [];

/** Every scheduler command. */
export const schedulerCommands = {
  submit: releasingCommand(
    'submit',
    ({ kind, tasks }: { kind: string; tasks: readonly NewTask[] }) => [
      kind,
      ...tasks.flatMap((t) => [
        t.publicId,
        t.accountId,
        t.order,
        t.createdAt.getTime(),
        t.releasesUsed ?? 0,
        t.createdAt.getTime() - (t.priority ?? 0) * 1000,
        t.expiresAt ? t.expiresAt.getTime() : 0,
        t.fairnessKey ?? NO_GROUP,
      ]),
    ],
    z.object({ joined: z.number(), positions: z.preprocess((v) => (Array.isArray(v) ? {} : v), z.record(z.string(), z.object({ ahead: z.number(), held_by_cap: z.boolean() }))) }),
  ),
  done: releasingCommand('done', ({ publicId }: { publicId: string }) => [publicId], z.enum(['done', 'unknown'])),
  handBack: releasingCommand('hand-back', ({ publicId, release }: { publicId: string; release: number }) => [publicId, release], runAnswer),
  retry: releasingCommand(
    'retry',
    ({ publicId, release, delayMs }: { publicId: string; release: number; delayMs: number }) => [publicId, release, Math.max(0, Math.round(delayMs))],
    runAnswer,
  ),
  cancel: releasingCommand(
    'cancel',
    ({ publicId }: { publicId: string }) => [publicId],
    z.object({ outcome: z.union([z.literal('removed'), stateName, z.literal('unknown')]), release: z.number() }),
  ),
  report: releasingCommand('report', noArgs, z.number()),
  tick: releasingCommand('tick', noArgs, z.number()),
  leave: releasingCommand('leave', noArgs, z.number()),
  setCaps: releasingCommand('set-caps', ({ caps }: { caps: ReadonlyArray<readonly [string, number]> }) => caps.flat(), z.number()),
  recount: releasingCommand('recount', noArgs, z.number()),
  cancelMany: releasingCommand(
    'cancel-many',
    ({ publicIds }: { publicIds: readonly string[] }) => publicIds,
    luaList(z.object({ task: z.string(), outcome: z.union([z.literal('removed'), stateName, z.literal('unknown')]), release: z.number() })),
  ),
  position: scripts.define({
    command: 'position',
    keys: (input: { scope: SchedulerScope; publicIds: readonly string[] }) => tasksKey(input.scope),
    args: ({ scope, publicIds }) => [...header(scope), ...publicIds],
    reply: jsonReply(z.record(z.string(), z.object({ state: stateName, ahead: z.number(), held_by_cap: z.boolean() }))),
  }),
  waiting: scripts.define({
    command: 'waiting',
    keys: (input: { scope: SchedulerScope; kind: string; offset: number; count: number }) => tasksKey(input.scope),
    args: ({ scope, kind, offset, count }) => [...header(scope), kind, offset, count],
    reply: jsonReply(
      z.object({
        total: z.number(),
        tasks: luaList(
          z.object({ task: z.string(), account: z.string(), group: z.string(), created_ms: z.number(), effective_ms: z.number(), deadline_ms: z.number(), held_by_cap: z.boolean() }),
        ).optional(),
      }),
    ),
  }),
  accounts: scripts.define({
    command: 'accounts',
    keys: (input: { scope: SchedulerScope; kind: string }) => tasksKey(input.scope),
    args: ({ scope, kind }) => [...header(scope), kind],
    reply: jsonReply(luaList(z.object({ account: z.string(), running: z.number(), waiting: z.number(), running_all_kinds: z.number(), cap: z.number() }))),
  }),
  accountGroups: scripts.define({
    command: 'account-groups',
    keys: (input: { scope: SchedulerScope; accountId: string }) => tasksKey(input.scope),
    args: ({ scope, accountId }) => [...header(scope), accountId],
    reply: jsonReply(z.record(z.string(), z.record(z.string(), z.object({ waiting: z.number(), running: z.number() })))),
  }),
  lookup: scripts.define({
    command: 'lookup',
    keys: (input: { scope: SchedulerScope; publicIds: readonly string[] }) => tasksKey(input.scope),
    args: ({ scope, publicIds }) => [...header(scope), ...publicIds],
    reply: jsonReply(z.record(z.string(), z.object({ state: stateName, kind: z.string(), account: z.string(), release: z.number() }))),
  }),
  inService: scripts.define({
    command: 'in-service',
    keys: (input: { scope: SchedulerScope; kind: string }) => tasksKey(input.scope),
    args: ({ scope, kind }) => [...header(scope), kind],
    reply: (raw) => z.array(z.string()).parse(raw),
  }),
  inspect: scripts.define({
    command: 'inspect',
    keys: (input: { scope: SchedulerScope }) => tasksKey(input.scope),
    args: ({ scope }) => header(scope),
    reply: jsonReply(
      z.object({
        kinds: luaList(z.object({ kind: z.string(), runnable: z.number(), held: z.number(), oldest_created_ms: z.number() })),
        now_ms: z.number(),
      }),
    ),
  }),
  account: scripts.define({
    command: 'account',
    keys: (input: { scope: SchedulerScope; accountId: string }) => tasksKey(input.scope),
    args: ({ scope, accountId }) => [...header(scope), accountId],
    // Per kind; `{}` (an empty Lua table) when no kind is known.
    reply: jsonReply(z.object({ running: z.number(), cap: z.number(), waiting: z.preprocess((v) => (Array.isArray(v) ? {} : v), z.record(z.string(), z.number())) })),
  }),
};

