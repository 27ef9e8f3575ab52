import fs from 'node:fs';

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
  command: string;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'.
    const close = text.lastIndexOf(')');
    const [state, ppid] = text.slice(close + 2).split(' ');
    return { pid, ppid: Number(ppid), state: state ?? '?', command: text.slice(text.indexOf('(') + 1, close) };
  } catch {
    return undefined; // gone between listing and reading
  }
}

/** The command line of a process (arguments joined by spaces), or '' when it is gone. */
export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** The process's name as the kernel shows it (`comm`: a program may rename itself), or undefined when it is gone. */
export function processName(pid: number): string | undefined {
  return readStat(pid)?.command;
}

/** Every live descendant of `pid` (children, their children, ...), read from /proc. */
export function descendants(pid: number): number[] {
  const all = fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((s): s is ProcStat => s !== undefined && s.state !== 'Z');
  const found: number[] = [];
  const frontier = [pid];
  while (frontier.length) {
    const parent = frontier.pop()!;
    for (const s of all) {
      if (s.ppid === parent) {
        found.push(s.pid);
        frontier.push(s.pid);
      }
    }
  }
  return found;
}

/** True while `pid` runs (a zombie, exited but not yet reaped, counts as gone). */
export function isAlive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}
