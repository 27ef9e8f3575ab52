// Progress lines as a Python model prints them with tqdm: what real Cog models write to their logs,
// and what our worker reads progress from (docs/models.md, "Progress").

const BAR_WIDTH = 10;
// tqdm's unicode bar: a full block per tenth, then the eighth of the partly filled one.
const PARTIAL = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

function clock(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const hh = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return hh ? `${hh}:${mm}:${ss}` : `${mm}:${ss}`;
}

/** One tqdm line for `n` of `total` steps done `elapsedMs` after the start, e.g. `" 40%|████      | 24/60 [00:01<00:02]"`. */
export function tqdmLine(n: number, total: number, elapsedMs: number): string {
  const fraction = total > 0 ? Math.min(1, Math.max(0, n / total)) : 0;
  const eighths = Math.floor(fraction * BAR_WIDTH * 8);
  const full = Math.floor(eighths / 8);
  const bar = full < BAR_WIDTH ? ('█'.repeat(full) + PARTIAL[eighths % 8]).padEnd(BAR_WIDTH) : '█'.repeat(BAR_WIDTH);
  const elapsed = elapsedMs / 1000;
  const remaining = n > 0 ? clock((elapsed * (total - n)) / n) : '?';
  return `${String(Math.round(fraction * 100)).padStart(3)}%|${bar}| ${n}/${total} [${clock(elapsed)}<${remaining}]`;
}
