// `npm run audit`: `npm audit --omit=dev` with a verdict. Fails on any high or critical advisory in
// what the services run (dev tooling is not shipped), printing each with its fix. When the
// registry's audit endpoint cannot be reached (some mirrors refuse it), says so plainly and exits
// 0, so an unreachable advisory service is reported, never mistaken for a clean bill of health.
import { spawnSync } from 'node:child_process';

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  console.error(`audit: npm audit gave no JSON (exit ${run.status}):\n${run.stderr.slice(0, 2000)}`);
  process.exit(1);
}

if (report.statusCode !== undefined || report.error !== undefined) {
  const why = report.message ?? report.error?.summary ?? 'unknown error';
  console.log(`audit: NOT CHECKED — the registry's advisory endpoint is unavailable here (${why}).`);
  process.exit(0);
}

const counts = report.metadata?.vulnerabilities ?? {};
const serious = Object.values(report.vulnerabilities ?? {}).filter((v) => v.severity === 'high' || v.severity === 'critical');
console.log(`audit: production dependencies: ${JSON.stringify(counts)}`);
for (const v of serious) {
  const via = v.via.map((x) => (typeof x === 'string' ? x : `${x.title} (${x.url})`)).join('; ');
  const fix = v.fixAvailable === false ? 'no fix available' : v.fixAvailable === true ? 'fix: npm audit fix' : `fix: ${v.fixAvailable.name}@${v.fixAvailable.version}`;
  console.log(`  ${v.severity} ${v.name} ${v.range}: ${via}; ${fix}`);
}
process.exit(serious.length > 0 ? 1 : 0);
