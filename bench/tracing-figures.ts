// Section `tracing` of `npm run bench` (docs/architecture.md, "Tracing"): what OpenTelemetry
// costs on the authenticated read, `GET /api/tasks/{id}`. Four APIs on the same database and
// Redis, one per mode, loaded in interleaved rounds:
//   - `disabled`: OTEL_SDK_DISABLED=true, the SDK not started at all (the baseline);
//   - `unset`: OTEL_EXPORTER_OTLP_ENDPOINT unset, as shipped: no SDK either, the task's trace
//     context carried by hand at creation only (nothing on a read: the figure should be noise);
//   - `exporting`: every span exported to a local OTLP receiver that drains each request and
//     answers 200 (it decodes nothing, so the figure is the API's own cost, not a collector's);
//   - `sampled`: the same with OTEL_TRACES_SAMPLER_ARG=0.1 (one new trace in ten recorded),
//     printed for the sampling decision in docs/performance.md, "Tracing (section 11)".
// Costs are (baseline − mode) / baseline in % of req/s, each against the baseline of its round.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '@taskapi/testing';
import { startApi, stop } from './processes';
import { median } from './stats';

export const TRACING_MODES = ['disabled', 'unset', 'exporting', 'sampled'] as const;
export type TracingMode = (typeof TRACING_MODES)[number];

export interface TracingFigures {
  /** Median req/s per mode. */
  rps: Record<TracingMode, number>;
  /** Median over rounds of the mode's cost against `disabled`, in %. */
  offCost: number;
  onCost: number;
  /** The same for `sampled`. */
  sampledCost: number;
  /** Export requests the receiver took (the exporting mode did export). */
  exports: number;
}

/** Loads `url` for one run and returns req/s (the bench's autocannon run). */
export type Load = (name: string, url: string) => Promise<number>;

/** An OTLP/HTTP endpoint that takes every export and answers 200 at once. */
async function startSink(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * @param env the API's environment (database, Redis, limits); PORT and the OTEL_* variables are set here
 * @param readPath `/api/tasks/<id>` of a task the key may read
 */
export async function tracingFigures(env: NodeJS.ProcessEnv, readPath: string, key: string, rounds: number, load: (name: string, url: string, headers: Record<string, string>) => Promise<number>): Promise<TracingFigures> {
  const sink = await startSink();
  const apis: Partial<Record<TracingMode, { child: ChildProcess; base: string }>> = {};
  try {
    for (const mode of TRACING_MODES) {
      const port = await freePort();
      const otel: NodeJS.ProcessEnv =
        mode === 'disabled'
          ? { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '' }
          : mode === 'unset'
            ? { OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: '' }
            : { OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER_ARG: mode === 'sampled' ? '0.1' : '1' };
      const child = await startApi({ ...env, ...otel, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
      apis[mode] = { child, base: `http://127.0.0.1:${port}` };
    }
    const headers = { 'x-api-key': key };
    const url = (mode: TracingMode) => `${apis[mode]!.base}${readPath}`;
    for (const mode of TRACING_MODES) await load(`warm-up ${mode}`, url(mode), headers);
    const rps: Record<TracingMode, number[]> = { disabled: [], unset: [], exporting: [], sampled: [] };
    const off: number[] = [];
    const on: number[] = [];
    const sampled: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const base = await load(`disabled, round ${r + 1}`, url('disabled'), headers);
      const unset = await load(`unset, round ${r + 1}`, url('unset'), headers);
      const exporting = await load(`exporting, round ${r + 1}`, url('exporting'), headers);
      const tenth = await load(`sampled, round ${r + 1}`, url('sampled'), headers);
      rps.sampled.push(tenth);
      sampled.push((100 * (base - tenth)) / base);
      rps.disabled.push(base);
      rps.unset.push(unset);
      rps.exporting.push(exporting);
      off.push((100 * (base - unset)) / base);
      on.push((100 * (base - exporting)) / base);
    }
    return {
      rps: { disabled: median(rps.disabled), unset: median(rps.unset), exporting: median(rps.exporting), sampled: median(rps.sampled) },
      offCost: median(off),
      onCost: median(on),
      sampledCost: median(sampled),
      exports: sink.requests(),
    };
  } finally {
    for (const api of Object.values(apis)) if (api) await stop(api.child);
    await sink.close();
  }
}
