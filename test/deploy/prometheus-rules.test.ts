// deploy/prometheus and deploy/grafana checked offline with the real tools: `promtool check rules`
// and `promtool test rules` (Debian's `prometheus` package; .ci/run installs it), that every alert
// has a unit test firing it and one where it stays silent, and the dashboard's shape (panels,
// queries, variables, layout). test/e2e/prometheus.test.ts then holds both to what the services
// export, with a real Prometheus.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { seriesSelectors } from '@taskapi/testing';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const DIR = path.join(ROOT, 'deploy/prometheus');
const RULES = path.join(DIR, 'taskapi-rules.yml');
const RULE_TESTS = path.join(DIR, 'taskapi-rules.test.yml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/taskapi-dashboard.json');
const OPERATIONS = path.join(ROOT, 'docs/operations.md');
const PROMTOOL = '/usr/bin/promtool';

/** Runs promtool; a failure carries its whole output. */
async function promtool(args: string[]): Promise<string> {
  if (!fs.existsSync(PROMTOOL)) {
    throw new Error(
      `promtool is not installed (missing ${PROMTOOL}). Install it as root: ` +
        'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus (.ci/run does)',
    );
  }
  try {
    const { stdout, stderr } = await run(PROMTOOL, args, { cwd: DIR });
    return stdout + stderr;
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: err });
  }
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}

const groups = (parse(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups;
const alerts = groups.flatMap((g) => g.rules);
const ruleTests = parse(fs.readFileSync(RULE_TESTS, 'utf8')) as { rule_files: string[]; tests: Array<{ name: string; alert_rule_test?: AlertTest[] }> };

interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<{ expr: string; refId: string; datasource?: { uid: string } }>;
}
const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string }> };
};
const panels = dashboard.panels.filter((p) => p.type !== 'row');
/** Variables Grafana defines itself. */
const GRAFANA_VARIABLES = new Set(['__rate_interval', '__interval', '__range']);
/** Where the dashboard's and the rules' metrics come from: the services' own and Node's process metrics (prom-client). */
const METRIC_PREFIXES = /^(taskapi_|process_|nodejs_)/;

describe('deploy/prometheus alert rules', () => {
  it('pass `promtool check rules`', async () => {
    expect(await promtool(['check', 'rules', RULES])).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('pass their unit tests (`promtool test rules`)', async () => {
    expect(ruleTests.rule_files).toEqual([path.basename(RULES)]);
    expect(await promtool(['test', 'rules', RULE_TESTS])).toContain('SUCCESS');
  });

  it('have a unit test where each alert fires and one where it stays silent', () => {
    const cases = ruleTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alerts) {
      const own = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: own.some((c) => (c.exp_alerts ?? []).length > 0), silent: own.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({
        alert,
        fires: true,
        silent: true,
      });
    }
  });

  it('are alerts with a severity, a summary and a description, named Taskapi…, and documented', () => {
    const docs = fs.readFileSync(OPERATIONS, 'utf8');
    const names = alerts.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of alerts) {
      expect(rule.record).toBeUndefined();
      expect(rule.alert).toMatch(/^Taskapi[A-Z]\w+$/);
      expect([rule.alert, rule.labels?.severity]).toEqual([rule.alert, expect.stringMatching(/^(warning|critical)$/)]);
      expect([rule.alert, Boolean(rule.annotations?.summary), Boolean(rule.annotations?.description)]).toEqual([rule.alert, true, true]);
      expect([rule.alert, docs.includes(`\`${rule.alert}\``)]).toEqual([rule.alert, true]);
    }
  });

  it('query only the services\' metrics, each selector readable', () => {
    for (const rule of alerts) {
      const selectors = seriesSelectors(rule.expr);
      expect(selectors.length).toBeGreaterThan(0);
      for (const s of selectors) expect([rule.alert, s.name]).toEqual([rule.alert, expect.stringMatching(METRIC_PREFIXES)]);
    }
  });
});

describe('deploy/grafana dashboard', () => {
  const variables = new Set(dashboard.templating.list.map((v) => v.name));

  it('has unique panel ids, a datasource variable on every panel and query, and no overlapping panels', () => {
    expect(dashboard.uid).toBe('taskapi-overview');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    for (const panel of panels) {
      expect([panel.title, panel.datasource?.uid]).toEqual([panel.title, '${datasource}']);
      expect([panel.title, (panel.targets ?? []).length > 0, Boolean(panel.description)]).toEqual([panel.title, true, true]);
      for (const t of panel.targets ?? []) expect([panel.title, t.datasource?.uid]).toEqual([panel.title, '${datasource}']);
    }
    // Grid cells taken by each panel: none twice, none past the 24 columns.
    const taken = new Map<string, string>();
    for (const p of dashboard.panels) {
      expect([p.title, p.gridPos.x + p.gridPos.w <= 24]).toEqual([p.title, true]);
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          const cell = `${x},${y}`;
          expect([p.title, taken.get(cell)]).toEqual([p.title, undefined]);
          taken.set(cell, p.title);
        }
      }
    }
  });

  it('queries only the services\' metrics, with variables it defines, each selector readable', () => {
    for (const panel of panels) {
      for (const { expr, refId } of panel.targets ?? []) {
        const where = `${panel.title} ${refId}`;
        const selectors = seriesSelectors(expr);
        expect([where, selectors.length > 0]).toEqual([where, true]);
        for (const s of selectors) expect([where, s.name]).toEqual([where, expect.stringMatching(METRIC_PREFIXES)]);
        for (const [, name] of expr.matchAll(/\$\{?(\w+)/g)) {
          expect([where, name, variables.has(name!) || GRAFANA_VARIABLES.has(name!)]).toEqual([where, name, true]);
        }
      }
    }
  });
});

describe('seriesSelectors', () => {
  it('reads metric names and matchers, not functions, keywords, label lists, ranges or variables', () => {
    expect(
      seriesSelectors(
        'histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{route!="/readyz", kind=~"$kind"}[$__rate_interval]))) ' +
          '/ on (route) group_left (x) b offset 5m > bool 0.5 and max_over_time(c[30m:1m]) unless {__name__="d", e=\'f\\\'g\'}',
      ),
    ).toEqual([
      { name: 'a_bucket', matchers: [{ label: 'route', op: '!=', value: '/readyz' }, { label: 'kind', op: '=~', value: '$kind' }] },
      { name: 'b', matchers: [] },
      { name: 'c', matchers: [] },
      { name: 'd', matchers: [{ label: 'e', op: '=', value: "f'g" }] },
    ]);
    expect(() => seriesSelectors('a{b="c"')).toThrow();
  });
});
