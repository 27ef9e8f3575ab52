import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { loadLuaCommands, type LuaCommand } from './lua-commands';

/** The clients a script runs on (a plain client, a cluster, or one reached through Sentinels). */
export type ScriptRedis = Pick<Redis, 'defineCommand'> | Pick<Cluster, 'defineCommand'>;

/**
 * One command's contract: how a call's named input becomes KEYS and ARGV, and how the reply
 * becomes named fields. Callers see only `In` and `Out`; the positions live here.
 */
export interface ScriptSpec<In, Out> {
  /** The command's file name without `-<keys>.lua`. */
  command: string;
  keys(input: In): readonly string[];
  args(input: In): ReadonlyArray<string | number>;
  reply(raw: unknown): Out;
}

/** A bound script: runs the command on `redis` (defined on that client at its first call). */
export type Script<In, Out> = (redis: ScriptRedis, input: In) => Promise<Out>;

type CommandFn = (...args: Array<string | number>) => Promise<unknown>;

/**
 * The scripts of one commands folder, under a namespace that keeps their ioredis command names
 * apart from other folders' (`<namespace>_<command>`).
 */
export class LuaScripts {
  private readonly commands: ReadonlyMap<string, LuaCommand>;

  constructor(
    folder: string,
    private readonly namespace: string,
  ) {
    this.commands = loadLuaCommands(folder);
  }

  /** Binds one command; a name with no file fails here, at start, not at the first call. */
  define<In, Out>(spec: ScriptSpec<In, Out>): Script<In, Out> {
    const command = this.commands.get(spec.command);
    if (!command) throw new Error(`no Redis command ${spec.command} among the ${this.namespace} scripts`);
    const name = `${this.namespace}_${command.name.replace(/-/g, '_')}`;
    const fixedKeys = command.numberOfKeys;
    return async (redis, input) => {
      const client = redis as unknown as Record<string, CommandFn | undefined> & ScriptRedis;
      let fn = client[name];
      if (typeof fn !== 'function') {
        client.defineCommand(name, fixedKeys === undefined ? { lua: command.lua } : { lua: command.lua, numberOfKeys: fixedKeys });
        fn = client[name] as CommandFn;
      }
      const keys = spec.keys(input);
      if (fixedKeys !== undefined && keys.length !== fixedKeys) throw new Error(`${name} takes ${fixedKeys} keys, was given ${keys.length}`);
      const args = spec.args(input);
      const raw = fixedKeys === undefined ? await fn.call(client, keys.length, ...keys, ...args) : await fn.call(client, ...keys, ...args);
      return spec.reply(raw);
    };
  }
}

/**
 * A list in a reply encoded with Redis's `cjson`, which writes an empty Lua table as `{}`: read as
 * an empty list.
 */
export function luaList<T extends z.ZodType>(item: T) {
  return z.preprocess((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0 ? [] : v), z.array(item));
}

/** A reply the script encodes with `cjson.encode`, checked against `schema`. */
export function jsonReply<T extends z.ZodType>(schema: T): (raw: unknown) => z.output<T> {
  return (raw) => schema.parse(JSON.parse(String(raw)));
}
