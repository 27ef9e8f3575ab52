// The final table of a chaos run.
import type { Figure } from './audit';

/** Prints the figures; returns the ones that fail the run. */
export function printReport(figures: Figure[]): Figure[] {
  const width = Math.max(...figures.map((f) => f.label.length)) + 2;
  const failed = figures.filter((f) => f.fails && f.value > 0);
  console.log(`\n${'figure'.padEnd(width)}${'count'.padStart(8)}  verdict`);
  console.log('-'.repeat(width + 20));
  for (const f of figures) {
    const verdict = !f.fails ? '' : f.value > 0 ? 'FAIL' : 'ok';
    console.log(`${f.label.padEnd(width)}${String(f.value).padStart(8)}  ${verdict}${f.note && (f.value > 0 || !f.fails) ? `  (${f.note})` : ''}`);
  }
  for (const f of figures.filter((x) => x.value > 0 && x.examples?.length)) {
    console.log(`\n${f.label}, e.g.:`);
    for (const e of f.examples ?? []) console.log(`  ${e}`);
  }
  return failed;
}
