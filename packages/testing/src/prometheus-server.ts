// A real Prometheus server for tests: Debian's `prometheus` package (.ci/run installs it), with a
// generated configuration scraping the given targets, under a temporary folder, on a free port.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './free-port';
import { endOrphanedServers, recordServer } from './owned-servers';
import { waitFor } from './wait';

const BINARY = '/usr/bin/prometheus';

/** One scrape job: `url` is the full metrics URL, e.g. http://127.0.0.1:41234/metrics. */
export interface ScrapeTarget {
  job: string;
  url: string;
}

export interface PrometheusOptions {
  targets: ScrapeTarget[];
  /** Rule files to load (absolute paths), evaluated every `intervalSeconds`. */
  ruleFiles?: string[];
  /** Scrape and rule evaluation interval; default 1 s (the scrape timeout is the same). */
  intervalSeconds?: number;
}

/** One sample of an instant vector, as the HTTP API returns it. */
export interface PrometheusSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PrometheusServer {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  /** The prometheus process id. */
  pid: number;
  /** `GET /api/v1/<endpoint>`: the `data` of a `success` answer; anything else throws with the error. */
  api<T>(endpoint: string, params?: Record<string, string>): Promise<T>;
  /** An instant query's vector (`/api/v1/query`); throws when the query fails or is not a vector. */
  query(promql: string): Promise<PrometheusSample[]>;
  /** Stops exactly the process this call started and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts Prometheus scraping `targets` (and evaluating `ruleFiles`) and waits until it is ready
 * (`/-/ready`). Its log is in the temporary folder and is quoted when it fails to start. Fails with
 * a clear message when the Debian package is missing.
 */
export async function startPrometheus(opts: PrometheusOptions): Promise<PrometheusServer> {
  if (!fs.existsSync(BINARY)) {
    throw new Error(
      `Prometheus is not installed (missing ${BINARY}). Install it as root: ` +
        'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus (.ci/run does)',
    );
  }
  endOrphanedServers();
  const interval = `${opts.intervalSeconds ?? 1}s`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-prometheus-'));
  // JSON is YAML: the configuration needs no YAML writer.
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: opts.ruleFiles ?? [],
    scrape_configs: opts.targets.map((target) => {
      const url = new URL(target.url);
      return { job_name: target.job, scheme: url.protocol.replace(':', ''), metrics_path: url.pathname, static_configs: [{ targets: [url.host] }] };
    }),
  };
  const configFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  const logFile = path.join(dir, 'prometheus.log');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;

  const log = fs.openSync(logFile, 'a');
  const child = spawn(
    BINARY,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const forget = child.pid === undefined ? () => undefined : recordServer(child.pid, 'prometheus');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(forget);
  let failed: Error | undefined;
  child.once('error', (err) => {
    failed = err;
  });
  const gone = () => child.exitCode !== null || child.signalCode !== null;

  const stop = async () => {
    if (!gone()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitFor(
      async () => {
        if (failed) throw failed;
        if (gone()) throw new Error(`prometheus exited (${child.exitCode ?? child.signalCode}): ${fs.readFileSync(logFile, 'utf8').slice(-2_000)}`);
        const res = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) });
        await res.arrayBuffer();
        return res.status === 200;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `prometheus on ${port}` },
    );
  } catch (err) {
    await stop();
    throw err;
  }

  const api = async <T>(endpoint: string, params: Record<string, string> = {}): Promise<T> => {
    const res = await fetch(`${url}/api/v1/${endpoint}?${new URLSearchParams(params).toString()}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { status: string; data?: T; errorType?: string; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${endpoint} ${JSON.stringify(params)}: ${body.errorType ?? res.status}: ${body.error ?? ''}`);
    return body.data as T;
  };
  return {
    url,
    pid: child.pid as number,
    api,
    async query(promql) {
      const data = await api<{ resultType: string; result: PrometheusSample[] }>('query', { query: promql });
      if (data.resultType !== 'vector') throw new Error(`${promql}: a ${data.resultType}, not a vector`);
      return data.result;
    },
    stop,
  };
}
