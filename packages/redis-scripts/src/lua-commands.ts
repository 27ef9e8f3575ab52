// Redis scripts live in `.lua` files, one command a file, as BullMQ keeps its own
// (`src/commands/<name>-<keys>.lua`, shared code in `includes/` pulled in by `--- @include "…"`).
// BullMQ compiles its files into JavaScript at its own build and exports no loader, so this is the
// small one we need: read a folder once per process and resolve the includes; lua-scripts.ts runs
// each by its hash (EVALSHA, with EVAL after a NOSCRIPT: a Redis that restarted or failed over has
// lost its script cache, and the command still runs).
import fs from 'node:fs';
import path from 'node:path';

/** One script, its includes resolved. */
export interface LuaCommand {
  /** The file's name without `-<keys>.lua` (`submit` for `submit-1.lua`). */
  name: string;
  /**
   * How many KEYS the command takes, from the file name (`submit-1.lua`: 1). A file without the
   * suffix takes a varying number: its caller passes the count before the keys.
   */
  numberOfKeys: number | undefined;
  /** The script with its includes resolved. */
  lua: string;
}

const COMMAND_FILE = /^([a-z][a-z0-9-]*?)(?:-(\d+))?\.lua$/;
const INCLUDE = /^--- @include "([^"]+)"[ \t]*$/gm;

/**
 * Where a workspace's commands are: `source` (its `src/commands` folder, named by the caller from
 * its own `__dirname`) in the source tree. In the built bundles every module shares dist/'s
 * `__dirname`, this one included, and `npm run build` copies each workspace's commands to
 * `dist/lua/<bundleName>`.
 */
export function commandsFolder(source: string, bundleName: string): string {
  return fs.existsSync(source) ? source : path.join(__dirname, 'lua', bundleName);
}

/** Inlines `--- @include "<file>"` lines (relative to the including file), each file once. */
function resolveIncludes(file: string, seen: Set<string>): string {
  const text = fs.readFileSync(file, 'utf8');
  return text.replace(INCLUDE, (_line, name: string) => {
    const target = path.resolve(path.dirname(file), name.endsWith('.lua') ? name : `${name}.lua`);
    if (seen.has(target)) return '';
    seen.add(target);
    return resolveIncludes(target, seen);
  });
}

const loaded = new Map<string, ReadonlyMap<string, LuaCommand>>();

/**
 * The commands of a folder (its `*.lua` files; `includes/` holds only shared code), read once per
 * process. A missing folder or include fails at once, naming the file.
 */
export function loadLuaCommands(folder: string): ReadonlyMap<string, LuaCommand> {
  const known = loaded.get(folder);
  if (known) return known;
  const commands = new Map<string, LuaCommand>();
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const m = COMMAND_FILE.exec(entry.name);
    if (!m) continue;
    const file = path.join(folder, entry.name);
    commands.set(m[1]!, { name: m[1]!, numberOfKeys: m[2] === undefined ? undefined : Number(m[2]), lua: resolveIncludes(file, new Set([file])) });
  }
  loaded.set(folder, commands);
  return commands;
}
