import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { loadLuaCommands, type LuaCommand } from './lua-commands';

/** The clients a script runs on (a plain client, a cluster, or one reached through Sentinels). */
export type ScriptRedis = Pick<Redis, 'evalsha' | 'eval'> | Pick<Cluster, 'evalsha' | 'eval'>;

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

/** A bound script: runs the command on `redis`. */
export type Script<In, Out> = (redis: ScriptRedis, input: In) => Promise<Out>;

type EvalFn = (script: string, numKeys: number, ...keysAndArgs: Array<string | number>) => Promise<unknown>;

/**
 * The scripts of one commands folder. Each call is an EVALSHA of the script's hash, and an EVAL
 * when Redis answers NOSCRIPT (it restarted or failed over and lost its script cache; the EVAL
 * caches it again), which is what ioredis's `defineCommand` does, without defining anything on the
 * client: a command defined on an auto-pipelining client while one of its pipelines is open is
 * missing from that pipeline, and ioredis then fails the whole batch.
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
    const sha = createHash('sha1').update(command.lua).digest('hex');
    const fixedKeys = command.numberOfKeys;
    return async (redis, input) => {
      const keys = spec.keys(input);
      if (fixedKeys !== undefined && keys.length !== fixedKeys) throw new Error(`${this.namespace} ${command.name} takes ${fixedKeys} keys, was given ${keys.length}`);
      const params = [...keys, ...spec.args(input)];
      const client = redis as unknown as { evalsha: EvalFn; eval: EvalFn };
      let raw: unknown;
      try {
        raw = await client.evalsha(sha, keys.length, ...params);
      } catch (err) {
        if (!/NOSCRIPT/.test((err as Error).message)) throw err;
        raw = await client.eval(command.lua, keys.length, ...params);
      }
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
