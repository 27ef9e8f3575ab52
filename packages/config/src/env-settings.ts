import { z } from 'zod';
import { ConfigError } from './config-error';

/** One environment variable: its name, and how its text becomes a config value (checks, default). */
export class EnvVariable<S extends z.ZodType = z.ZodType> {
  constructor(
    readonly name: string,
    readonly schema: S,
  ) {}
}

export function variable<S extends z.ZodType>(name: string, schema: S): EnvVariable<S> {
  return new EnvVariable(name, schema);
}

/** Config fields, nested as the config is, with one variable at each leaf. */
export interface Settings {
  readonly [field: string]: EnvVariable | Settings;
}

/** What a settings tree parses into: the same tree with each variable replaced by its value. */
export type Parsed<T> = T extends EnvVariable<infer S> ? z.output<S> : { readonly [K in keyof T]: Parsed<T[K]> };

export function* variablesOf(settings: Settings): Generator<EnvVariable> {
  for (const node of Object.values(settings)) {
    if (node instanceof EnvVariable) yield node;
    else yield* variablesOf(node);
  }
}

function valuesOf(settings: Settings, env: Record<string, unknown>): unknown {
  const fields = Object.entries(settings).map(([field, node]) => [field, node instanceof EnvVariable ? env[node.name] : valuesOf(node, env)]);
  return Object.freeze(Object.fromEntries(fields));
}

/**
 * A zod object over the environment with one key per variable (so every issue's path is the
 * variable's name) whose output is the settings tree filled with the values, frozen.
 */
export function envSchema<T extends Settings>(settings: T) {
  const shape: Record<string, z.ZodType> = {};
  for (const v of variablesOf(settings)) {
    if (shape[v.name]) throw new Error(`${v.name} is declared twice`);
    shape[v.name] = v.schema;
  }
  return z.object(shape).transform((env) => valuesOf(settings, env) as Parsed<T>);
}

/** An issue message that starts with the variable's name: `named('must be a whole number')`. */
export const named = (problem: string) => ({ error: (issue: { path?: PropertyKey[] }) => `${issue.path?.map(String).join('.')} ${problem}` });

/**
 * Parses the environment with an `envSchema` (empty values count as unset). Throws `ConfigError`
 * listing every issue, each under the variable it is about.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  const set: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') set[k] = v;
  const parsed = schema.safeParse(set);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => (i.path.length > 0 ? `${i.path.map(String).join('.')}: ${i.message}` : i.message));
  throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
}

/** A whole number from 1 to `max`. */
export const wholeNumber = (max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, named('must be a whole number'))
    .transform(Number)
    .pipe(z.number().int().min(1, named('must be at least 1')).max(max, named(`must be at most ${max}`)));

/** A whole number of milliseconds from 0 to `max`; `zero` says what 0 means, in the message. */
export const millisecondsFromZero = (max: number, zero?: string) =>
  z
    .string()
    .regex(/^\d+$/, named(`must be a whole number of milliseconds${zero ? ` (0: ${zero})` : ''}`))
    .transform(Number)
    .pipe(z.number().int().max(max, named(`must be at most ${max}`)));

export const portNumber = () =>
  z
    .string()
    .regex(/^\d+$/, named('must be a port number'))
    .transform(Number)
    .pipe(z.number().int().min(0).max(65535, named('must be at most 65535')));

export const flag = () =>
  z.enum(['true', 'false', '1', '0', 'yes', 'no'], named('must be true or false')).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Comma-separated items, each parsed by `item` (undefined: not valid); at least one. */
export const commaList = <T>(item: (text: string) => T | undefined) =>
  z
    .string()
    .refine((raw) => raw.split(',').some((s) => s.trim().length > 0), named('must not be empty'))
    .transform((raw, ctx) => {
      const items: T[] = [];
      for (const text of raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0)) {
        const value = item(text);
        if (value === undefined) ctx.issues.push({ code: 'custom', message: `"${text}" is not valid`, input: raw });
        else items.push(value);
      }
      return items;
    });
