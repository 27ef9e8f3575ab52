// The monitoring of deploy/ against the real thing: the API, a worker and the dispatcher run as the
// image runs them (node dist/<service>.js, process metrics included) while tasks run, a real
// Prometheus (Debian's package) scrapes them every second with deploy/prometheus/taskapi-rules.yml
// loaded, and the test reads the queue depth and the HTTP metrics through its HTTP API. Every
// metric and label the alert rules and the Grafana dashboard use must be one the services export,
// every dashboard query must evaluate, and the readiness gauges must say what /readyz says.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { FAILURE_ERROR_CODES } from '@taskapi/domain';
import {
  freePort,
  parseMetrics,
  seriesSelectors,
  startHttpsReceiver,
  startPrivateRedis,
  startPrometheus,
  waitFor,
  type HttpsReceiver,
  type MetricSample,
  type PrivateRedis,
  type PrometheusServer,
} from '@taskapi/testing';
import { createKey, seedAccount, seedGrant, withKey, type CreatedKey } from '../../services/api/test/support/harness';
import { startChild, startSystem, type ChildService, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const ROOT = path.resolve(__dirname, '../..');
const RULES = path.join(ROOT, 'deploy/prometheus/taskapi-rules.yml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/taskapi-dashboard.json');
/** Labels Prometheus itself gives every scraped series. */
const TARGET_LABELS = new Set(['job', 'instance']);
/** Dashboard panels that show only trouble, so they are empty on a healthy system. */
const EMPTY_WHEN_HEALTHY = new Set(['5xx / s by route', 'Readiness changes (15 min)']);

async function scrape(url: string): Promise<MetricSample[]> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

interface Rule {
  alert: string;
  expr: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}

const rules = (parse(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups;
const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: { query: string } }> };
};
const panels = dashboard.panels.filter((p) => p.type !== 'row');
/** Every PromQL expression of deploy/: each rule's and each panel target's, named for the failure message. */
const EXPRESSIONS: Array<[where: string, expr: string]> = [
  ...rules.flatMap((g) => g.rules.map((r) => [`rule ${r.alert}`, r.expr] as [string, string])),
  ...panels.flatMap((p) => (p.targets ?? []).map((t) => [`panel "${p.title}"`, t.expr] as [string, string])),
];
/** The dashboard's query variables: `label_values(metric, label)`. */
const LABEL_VALUES = dashboard.templating.list
  .filter((v) => v.type === 'query')
  .map((v) => {
    const m = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.query?.query ?? '');
    if (!m) throw new Error(`dashboard variable ${v.name}: not a label_values(metric, label) query`);
    return { variable: v.name, metric: m[1]!, label: m[2]! };
  });

/** A dashboard query as Grafana sends it (its variables at their "All" value). */
const asGrafanaSends = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replaceAll('$kind', '.*');

describe('Prometheus scraping the services, with the alert rules and the dashboard of deploy/', () => {
  let redis: PrivateRedis;
  let system: TestSystem;
  let api: ChildService;
  let worker: ChildService;
  let dispatcher: ChildService;
  let receiver: HttpsReceiver;
  let prometheus: PrometheusServer;
  let urls: { api: string; worker: string; dispatcher: string };
  let key: CreatedKey;

  beforeAll(async () => {
    // A Redis server of this file's own: databases 1-14 of the run's are the other files'.
    redis = await startPrivateRedis();
    system = await startSystem(0, { REDIS_URL: `${redis.url}/0`, WORKER_KINDS: 'image-generation,face-detection' });
    receiver = await startHttpsReceiver(() => 204);
    const [apiPort, workerPort, dispatcherPort] = await Promise.all([freePort(), freePort(), freePort()]);
    urls = { api: `http://127.0.0.1:${apiPort}`, worker: `http://127.0.0.1:${workerPort}`, dispatcher: `http://127.0.0.1:${dispatcherPort}` };
    [api, worker, dispatcher] = await Promise.all([
      // One request a minute for trial keys, so the test can provoke a refusal.
      startChild('api', { ...system.env, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: urls.api, RATE_LIMIT_TRIAL_PER_MINUTE: '1' }, 'api listening', 'node'),
      startChild('worker', { ...system.env, HOST: '127.0.0.1', OPS_PORT: String(workerPort) }, 'worker started', 'node'),
      startChild('webhook-dispatcher', { ...system.env, HOST: '127.0.0.1', OPS_PORT: String(dispatcherPort) }, 'webhook dispatcher started', 'node'),
    ]);
    prometheus = await startPrometheus({
      targets: [
        { job: 'taskapi-api', url: `${urls.api}/metrics` },
        { job: 'taskapi-worker', url: `${urls.worker}/metrics` },
        { job: 'taskapi-dispatcher', url: `${urls.dispatcher}/metrics` },
      ],
      ruleFiles: [RULES],
    });

    // Work through the API the test scrapes: one task run with its webhook, one that fails on its
    // input, one that waits (no worker runs video-generation), one cancelled, one refusal by the
    // rate limiter, one readiness probe.
    const account = await seedAccount(system.api, { credits: 1000, label: 'prometheus' });
    key = await createKey(system.api, account, { type: 'paid' });
    const trialKey = await createKey(system.api, account, { type: 'trial', grant_id: await seedGrant(system.api, account, 10) });
    const create = async (kind: string, body: Record<string, unknown>) => {
      const res = await fetch(`${urls.api}/api/tasks/${kind}`, { method: 'POST', headers: { ...withKey(key), 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
      return ((await res.json()) as { public_id: string }).public_id;
    };
    const image = await create('image-generation', { prompt: 'a lighthouse at dusk', width: 64, height: 64, callback_url: receiver.url('/hooks') });
    // A PNG signature and nothing readable after it: accepted by the API, refused by the engine.
    const notPng = await create('face-detection', { image_base64: Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)]).toString('base64') });
    await create('video-generation', { prompt: 'waits for a worker', duration_seconds: 1 });
    const cancelled = await create('video-generation', { prompt: 'cancelled', duration_seconds: 1 });
    expect((await fetch(`${urls.api}/api/tasks/${cancelled}/cancel`, { method: 'POST', headers: withKey(key) })).status).toBe(200);
    const trialStatuses = [];
    for (let i = 0; i < 2; i++) trialStatuses.push((await fetch(`${urls.api}/api/tasks/${image}`, { headers: withKey(trialKey) })).status);
    expect(trialStatuses[1]).toBe(429);
    expect((await fetch(`${urls.api}/readyz`)).status).toBe(200);
    expect((await waitForTask(system.api, key.plaintext, image)).status).toBe(20);
    expect(await waitForTask(system.api, key.plaintext, notPng)).toMatchObject({ status: 30, error_code: 'invalid_input' });
    await waitFor(() => receiver.at('/hooks').length > 0, { timeoutMs: 20_000, what: 'the webhook' });
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop();
    await Promise.all([api?.stop(), worker?.stop(), dispatcher?.stop()]);
    await receiver?.close();
    await system?.stop();
    await redis?.stop();
  }, 60_000);

  /** Waits until `promql` has a sample for which `accept` holds; returns the samples. */
  const queried = (promql: string, accept: (value: number, labels: Record<string, string>) => boolean = () => true) =>
    waitFor(
      async () => {
        const samples = await prometheus.query(promql);
        return samples.some((s) => accept(Number(s.value[1]), s.metric)) ? samples : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250, what: `Prometheus to answer ${promql}` },
    );

  it('scrapes the API, the worker and the dispatcher, and answers queue depth and HTTP metrics through its query API', async () => {
    await queried('count(up == 1) == 3');
    expect((await prometheus.query('up')).map((s) => s.metric.job).sort()).toEqual(['taskapi-api', 'taskapi-dispatcher', 'taskapi-worker']);

    // The task no worker takes waits in the queue-wide gauge; the image queue is empty again.
    const depth = await queried('taskapi_queue_depth', (v, l) => l.kind === 'video-generation' && v === 1);
    expect(depth.find((s) => s.metric.kind === 'image-generation')?.value[1]).toBe('0');
    expect(depth.every((s) => s.metric.job === 'taskapi-api')).toBe(true);
    await queried('taskapi_queue_oldest_waiting_seconds{kind="video-generation"}', (v) => v >= 0);

    // HTTP metrics: the creations (201) and the refusal (429), their latency histogram, a rate.
    const created = await queried('sum by (status) (taskapi_http_requests_total{method="POST", route=~"/api/tasks/.*"})', (v, l) => l.status === '201' && v >= 3);
    expect(created.map((s) => s.metric.status)).toContain('201');
    await queried('sum(taskapi_http_requests_total{status="429"})', (v) => v >= 1);
    await queried('sum(taskapi_http_request_duration_seconds_count)', (v) => v >= 5);
    await queried('sum(rate(taskapi_http_requests_total[1m]))', (v) => v > 0);

    // What ends on the worker and the dispatcher.
    await queried('taskapi_worker_task_runs_total{kind="image-generation", outcome="completed"}', (v) => v >= 1);
    await queried('taskapi_webhook_attempts_total{outcome="succeeded"}', (v) => v >= 1);
    // Failed tasks by error code: the one invalid input, and every other code of each kind the
    // worker runs at 0 (2 kinds × 6 codes).
    await queried('taskapi_worker_tasks_failed_total{kind="face-detection", error_code="invalid_input"}', (v) => v === 1);
    const otherFailures = await prometheus.query('taskapi_worker_tasks_failed_total{error_code!="invalid_input"} > 0 or taskapi_worker_tasks_failed_total{kind!="face-detection"} > 0');
    expect(otherFailures).toEqual([]);
    expect((await prometheus.query('count(taskapi_worker_tasks_failed_total)'))[0]?.value[1]).toBe(String(2 * FAILURE_ERROR_CODES.length));

    // Every process ready, each backend reachable, by service.
    await queried('count(taskapi_ready == 1) == 3');
    expect((await prometheus.query('taskapi_ready')).map((s) => s.metric.service).sort()).toEqual(['api', 'webhook-dispatcher', 'worker']);
    const backends = await prometheus.query('taskapi_backend_up');
    expect(backends.map((s) => `${s.metric.service} ${s.metric.backend} ${s.value[1]}`).sort()).toEqual([
      'api database 1',
      'api redis 1',
      'api storage 1',
      'webhook-dispatcher database 1',
      'webhook-dispatcher redis 1',
      'worker database 1',
      'worker redis 1',
      'worker storage 1',
    ]);
  });

  it('loads every rule group healthy, and no alert fires or is pending on a healthy system', async () => {
    // Rules evaluated before the first scrape see no series (TaskapiQueueSignalsMissing pending):
    // judge an evaluation made once every target has been scraped.
    await queried('count(up == 1) == 3');
    await queried('taskapi_queue_depth');
    const scraped = Date.now();
    type RuleState = { name: string; health: string; lastError?: string; lastEvaluation: string };
    const groups = await waitFor(
      async () => {
        const data = await prometheus.api<{ groups: Array<{ name: string; rules: RuleState[] }> }>('rules');
        return data.groups.every((g) => g.rules.every((r) => Date.parse(r.lastEvaluation) > scraped)) ? data.groups : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250, what: 'every rule to be evaluated after the first scrapes' },
    );
    // Prometheus lists the groups by name, each group's rules in file order.
    expect(groups.map((g) => g.name)).toEqual(rules.map((g) => g.name).sort());
    for (const group of groups) {
      expect(group.rules.map((r) => r.name)).toEqual(rules.find((g) => g.name === group.name)!.rules.map((r) => r.alert));
      for (const rule of group.rules) expect({ rule: rule.name, health: rule.health, error: rule.lastError ?? '' }).toEqual({ rule: rule.name, health: 'ok', error: '' });
    }
    const { alerts } = await prometheus.api<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('alerts');
    expect(alerts.map((a) => `${a.labels.alertname} ${a.state}`)).toEqual([]);
  });

  it('exports every metric and label the alert rules and the dashboard use', async () => {
    const exported = [...(await scrape(urls.api)), ...(await scrape(urls.worker)), ...(await scrape(urls.dispatcher))];
    const byName = new Map<string, MetricSample[]>();
    for (const s of exported) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);

    const problems: string[] = [];
    const sources = [...EXPRESSIONS, ...LABEL_VALUES.map(({ variable, metric, label }) => [`variable $${variable}`, `${metric}{${label}=~".+"}`] as [string, string])];
    let checked = 0;
    for (const [where, expr] of sources) {
      const selectors = seriesSelectors(expr);
      if (selectors.length === 0) problems.push(`${where}: no series selector in ${expr}`);
      for (const { name, matchers } of selectors) {
        checked++;
        const samples = name === undefined ? [] : (byName.get(name) ?? []);
        if (samples.length === 0) {
          problems.push(`${where}: ${name === undefined ? `a selector without a metric name in ${expr}` : `no service exports ${name}`}`);
          continue;
        }
        for (const { label, op, value } of matchers) {
          if (TARGET_LABELS.has(label)) continue;
          if (!samples.some((s) => label in s.labels)) problems.push(`${where}: ${name} has no label ${label}`);
          // A value matched or excluded by equality must exist (a typo would match, or exclude, nothing).
          else if ((op === '=' || op === '!=') && !value.includes('$') && !samples.some((s) => s.labels[label] === value)) {
            problems.push(`${where}: ${name} never has ${label}="${value}"`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(EXPRESSIONS.length);
  });

  it('evaluates every dashboard query, and every panel but the trouble-only ones shows data', async () => {
    const results = (panel: Panel) =>
      // Rejects (failing the test with Prometheus's error) when a query does not evaluate.
      Promise.all((panel.targets ?? []).map(async (t) => (await prometheus.api<{ result: unknown[] }>('query', { query: asGrafanaSends(t.expr) })).result));
    const empty: string[] = [];
    for (const panel of panels) {
      const first = await results(panel);
      if (EMPTY_WHEN_HEALTHY.has(panel.title) || first.some((r) => r.length > 0)) continue;
      // A rate needs two scrapes in its window: wait for them rather than failing early.
      const shown = await waitFor(async () => (await results(panel)).some((r) => r.length > 0), { timeoutMs: 10_000, intervalMs: 250, what: `data in "${panel.title}"` }).catch(() => false);
      if (!shown) empty.push(panel.title);
    }
    expect(empty).toEqual([]);
  });

  it('reports in taskapi_ready and taskapi_backend_up what /readyz answers, on every service', async () => {
    for (const [service, url] of [['api', urls.api], ['worker', urls.worker], ['webhook-dispatcher', urls.dispatcher]] as const) {
      const readyz = (await (await fetch(`${url}/readyz`)).json()) as { status: string; checks: Record<string, string> };
      const samples = await scrape(url);
      const gauges = Object.fromEntries(
        samples.filter((s) => s.name === 'taskapi_backend_up').map((s) => [s.labels.backend!, s.value === 1 ? 'ok' : 'unavailable']),
      );
      expect({ service, checks: gauges }).toEqual({ service, checks: readyz.checks });
      const ready = samples.filter((s) => s.name === 'taskapi_ready');
      expect(ready).toEqual([{ name: 'taskapi_ready', labels: { service }, value: readyz.status === 'ready' ? 1 : 0 }]);
      expect(samples.filter((s) => s.name === 'taskapi_backend_up').every((s) => s.labels.service === service)).toBe(true);
    }
  });
});
