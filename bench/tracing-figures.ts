// Section `tracing` of `npm run bench` (docs/architecture.md, "Tracing"): what OpenTelemetry
// costs on the authenticated read, `GET /api/tasks/{id}`, and on the pipeline. Five APIs on the
// same database and Redis, one per mode, loaded in interleaved rounds whose order turns (disabled,
// unset, …, sampled; unset, …, sampled, disabled; …):
//   - `disabled`: OTEL_SDK_DISABLED=true, the SDK not started at all (the baseline);
//   - `unset`: OTEL_EXPORTER_OTLP_ENDPOINT unset, as shipped: no SDK either, the task's trace
//     context carried by hand at creation only (nothing on a read: the figure should be noise);
//   - `exporting`: every span exported to a local OTLP receiver that drains each request and
//     answers 200 (it decodes nothing, so the figure is the API's own cost, not a collector's),
//     as OTLP/JSON as shipped;
//   - `protobuf`: the same with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, the encoding the
//     default was chosen against (docs/performance.md, "Tracing (section 11)");
//   - `sampled`: the same with OTEL_TRACES_SAMPLER_ARG=0.1 (one new trace in ten recorded),
//     printed for the sampling decision in docs/performance.md, "Tracing (section 11)".
// Then the pipeline (pipeline-figures.ts: image tasks created over HTTP → one worker → one
// dispatcher → signed webhook received by the bench receiver) in the first three modes and one of
// its own, `unrecorded` (the SDK started with the endpoint set and OTEL_TRACES_SAMPLER_ARG=0:
// every hook and context hand-off runs, no span is recorded or exported, which parts what the
// instrumentation's machinery costs from what recording and exporting spans cost), the worker
// and dispatcher started in the same mode as the API they take tasks from, in interleaved rounds
// whose order turns the same way.
// Costs are (baseline − mode) / baseline in % of req/s or tasks/s, each against the baseline of
// its round.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '@taskapi/testing';
import { cpuTotal, PIPELINE_WARM_UP_TASKS, pipelineRun, type PipelineContext, type PipelineRun } from './pipeline-figures';
import { startApi, stop } from './processes';
import { cpuMs } from './runtime-figures';
import { median } from './stats';

export const TRACING_MODES = ['disabled', 'unset', 'exporting', 'protobuf', 'sampled'] as const;
export type TracingMode = (typeof TRACING_MODES)[number];
/** The pipeline's modes (the sampled one is the read's only, `unrecorded` the pipeline's). */
export const PIPELINE_TRACING_MODES = ['disabled', 'unset', 'unrecorded', 'exporting'] as const;
export type PipelineTracingMode = (typeof PIPELINE_TRACING_MODES)[number];
/** The modes an API is started in: the read's and the pipeline's. */
const API_MODES = [...TRACING_MODES, 'unrecorded'] as const;
type ApiMode = (typeof API_MODES)[number];
/** Services named in the exports the sink took (`other`: a batch whose resource it did not recognise). */
export type ExportingService = 'api' | 'worker' | 'webhook-dispatcher' | 'other';

/** Worker and dispatcher processes of a pipeline round (section 5's smallest configuration). */
const PIPELINE_WORKERS = 1;
const PIPELINE_DISPATCHERS = 1;

export interface TracingFigures {
  /** Median req/s per mode. */
  rps: Record<TracingMode, number>;
  /** Each round's req/s per mode, in the order the rounds ran. */
  rounds: Array<Record<TracingMode, number>>;
  /** Median over rounds of the API's CPU time per read (µs, from /proc/<pid>/stat). */
  cpuUsPerRead: Record<TracingMode, number>;
  /** Median over rounds of the mode's cost against `disabled`, in %. */
  offCost: number;
  onCost: number;
  /** The same for `protobuf` and `sampled`. */
  protobufCost: number;
  sampledCost: number;
  /** Export requests the receiver took during the read's rounds (the exporting mode did export). */
  exports: number;
  /** The pipeline's figures with tasks created as fast as the API takes them, and at a steady rate. */
  pipeline?: PipelineTracingFigures | undefined;
  steady?: PipelineTracingFigures | undefined;
}

export interface PipelineTracingFigures {
  tasks: number;
  /** Creations per second of the steady rounds; undefined: as fast as the API takes them. */
  perSecond: number | undefined;
  workers: number;
  dispatchers: number;
  /** Median tasks/s per mode (first creation sent → last webhook received). */
  tasksPerSecond: Record<PipelineTracingMode, number>;
  /** Median over rounds of the mode's cost against `disabled`, in % of tasks/s. */
  offCost: number;
  onCost: number;
  /** Each round's tasks/s per mode, in the order the rounds ran. */
  rounds: Array<Record<PipelineTracingMode, number>>;
  /** Median CPU ms per task of the API, the worker, the dispatcher, PostgreSQL and Redis, per mode. */
  cpuPerTask: Record<PipelineTracingMode, PipelineRun['cpuPerTask']>;
  /**
   * Median over rounds of what exporting every span adds to the CPU per task of all five processes
   * against OTEL_SDK_DISABLED in the same round: ms, and % of the disabled round's.
   */
  exportingCpu: { ms: number; percent: number };
  /** The same for the SDK running with nothing recorded (`unrecorded`). */
  unrecordedCpu: { ms: number; percent: number };
  /** Export requests the receiver took during the pipeline's rounds, by the service that sent them. */
  exports: Record<ExportingService, number>;
  /** Spans exported per task during the pipeline's rounds (warm-up tasks included), by service. */
  spansPerTask: Record<ExportingService, number>;
}

/**
 * `service.name` in the first bytes of an export, protobuf or JSON: the resource comes first in
 * either, its attribute's value within a few bytes of its key.
 */
const SERVICE_NAME = /service\.name[\s\S]{0,40}?(webhook-dispatcher|worker|api)/;

/** The service whose export begins with `head` (the first chunk of its body). */
export function exportingService(head: Buffer): ExportingService {
  const m = SERVICE_NAME.exec(head.subarray(0, 512).toString('latin1'));
  return (m?.[1] as ExportingService | undefined) ?? 'other';
}

/** Spans in an OTLP/JSON export: each has one `startTimeUnixNano` (its events have `timeUnixNano`). */
function jsonSpanCount(body: string): number {
  let n = 0;
  for (let i = body.indexOf('"startTimeUnixNano"'); i !== -1; i = body.indexOf('"startTimeUnixNano"', i + 1)) n++;
  return n;
}

/**
 * An OTLP/HTTP endpoint that takes every export and answers 200 at once. It decodes nothing,
 * so that its own CPU (on the same cores) stays small; it only reads the service's name from the
 * first chunk of each export, to count them by service, and counts the spans of JSON exports.
 */
async function startSink(): Promise<{
  url: string;
  requests: () => number;
  byService: () => Record<ExportingService, number>;
  spansByService: () => Record<ExportingService, number>;
  close(): Promise<void>;
}> {
  let requests = 0;
  const byService: Record<ExportingService, number> = { api: 0, worker: 0, 'webhook-dispatcher': 0, other: 0 };
  const spansByService: Record<ExportingService, number> = { api: 0, worker: 0, 'webhook-dispatcher': 0, other: 0 };
  const server = http.createServer((req, res) => {
    let service: ExportingService | undefined;
    const json = String(req.headers['content-type']).startsWith('application/json');
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      service ??= exportingService(chunk);
      if (json) chunks.push(chunk);
    });
    req.on('end', () => {
      requests++;
      byService[service ?? 'other']++;
      if (json) spansByService[service ?? 'other'] += jsonSpanCount(Buffer.concat(chunks).toString('latin1'));
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    byService: () => ({ ...byService }),
    spansByService: () => ({ ...spansByService }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What each service's count grew by between two readings of the sink, divided by `per`. */
function perService(before: Record<ExportingService, number>, after: Record<ExportingService, number>, per: number): Record<ExportingService, number> {
  const grown = (service: ExportingService) => (after[service] - before[service]) / per;
  return { api: grown('api'), worker: grown('worker'), 'webhook-dispatcher': grown('webhook-dispatcher'), other: grown('other') };
}

/** Round `r`'s order: the modes turned by `r`, so that each is measured in each place in turn. */
function turned<T>(modes: readonly T[], r: number): T[] {
  return modes.map((_, i) => modes[(r + i) % modes.length]!);
}

/** The `OTEL_*` settings of a mode, for the API and, in the pipeline, its worker and dispatcher. */
function otelEnv(mode: ApiMode, sinkUrl: string): NodeJS.ProcessEnv {
  if (mode === 'disabled') return { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  if (mode === 'unset') return { OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  return {
    OTEL_SDK_DISABLED: 'false',
    OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: mode === 'protobuf' ? 'http/protobuf' : '',
    OTEL_TRACES_SAMPLER_ARG: mode === 'sampled' ? '0.1' : mode === 'unrecorded' ? '0' : '1',
  };
}

/** The pipeline's interleaved rounds in every mode (`run` runs one round's tasks in a mode), and its figures. */
async function pipelineModes(
  sink: Awaited<ReturnType<typeof startSink>>,
  rounds: number,
  tasks: number,
  run: (mode: PipelineTracingMode) => Promise<PipelineRun>,
  perSecond?: number,
): Promise<PipelineTracingFigures> {
  const exportsBefore = sink.byService();
  const spansBefore = sink.spansByService();
  const perRound: Array<Record<PipelineTracingMode, PipelineRun>> = [];
  for (let r = 0; r < rounds; r++) {
    const round: Partial<Record<PipelineTracingMode, PipelineRun>> = {};
    for (const mode of turned(PIPELINE_TRACING_MODES, r)) round[mode] = await run(mode);
    perRound.push(round as Record<PipelineTracingMode, PipelineRun>);
  }
  const tps = (mode: PipelineTracingMode) => perRound.map((round) => round[mode].tasksPerSecond);
  const cost = (mode: PipelineTracingMode) => median(perRound.map((round) => (100 * (round.disabled.tasksPerSecond - round[mode].tasksPerSecond)) / round.disabled.tasksPerSecond));
  const added = (mode: PipelineTracingMode) => ({
    ms: median(perRound.map((round) => cpuTotal(round[mode].cpuPerTask) - cpuTotal(round.disabled.cpuPerTask))),
    percent: median(perRound.map((round) => (100 * (cpuTotal(round[mode].cpuPerTask) - cpuTotal(round.disabled.cpuPerTask))) / cpuTotal(round.disabled.cpuPerTask))),
  });
  const cpu = (mode: PipelineTracingMode) => ({
    api: median(perRound.map((round) => round[mode].cpuPerTask.api)),
    workers: median(perRound.map((round) => round[mode].cpuPerTask.workers)),
    dispatchers: median(perRound.map((round) => round[mode].cpuPerTask.dispatchers)),
    postgres: median(perRound.map((round) => round[mode].cpuPerTask.postgres)),
    redis: median(perRound.map((round) => round[mode].cpuPerTask.redis)),
  });
  // Workers and dispatchers flush their spans as they stop after each run; the API exports
  // what it holds within its batch delay (1 s).
  await new Promise((r) => setTimeout(r, 1_500));
  const exportsAfter = sink.byService();
  const spansAfter = sink.spansByService();
  const exportedTasks = rounds * (tasks + PIPELINE_WARM_UP_TASKS);
  return {
    tasks,
    perSecond,
    workers: PIPELINE_WORKERS,
    dispatchers: PIPELINE_DISPATCHERS,
    tasksPerSecond: { disabled: median(tps('disabled')), unset: median(tps('unset')), unrecorded: median(tps('unrecorded')), exporting: median(tps('exporting')) },
    offCost: cost('unset'),
    onCost: cost('exporting'),
    rounds: perRound.map((round) => ({
      disabled: round.disabled.tasksPerSecond,
      unset: round.unset.tasksPerSecond,
      unrecorded: round.unrecorded.tasksPerSecond,
      exporting: round.exporting.tasksPerSecond,
    })),
    cpuPerTask: { disabled: cpu('disabled'), unset: cpu('unset'), unrecorded: cpu('unrecorded'), exporting: cpu('exporting') },
    exportingCpu: added('exporting'),
    unrecordedCpu: added('unrecorded'),
    exports: perService(exportsBefore, exportsAfter, 1),
    spansPerTask: perService(spansBefore, spansAfter, exportedTasks),
  };
}

export interface TracingOptions {
  /** The API's environment (database, Redis, limits); PORT and the OTEL_* variables are set here. */
  env: NodeJS.ProcessEnv;
  /** `/api/tasks/<id>` of a task the key may read. */
  readPath: string;
  key: string;
  rounds: number;
  /** false: the pipeline only (BENCH_TRACING_READ=0), the read's figures NaN. */
  read: boolean;
  /** Loads `url` for one run (the bench's autocannon run): req/s and the requests answered. */
  load: (name: string, url: string, headers: Record<string, string>) => Promise<{ rps: number; requests: number }>;
  /**
   * The pipeline's context (its `base`, `apiPid` and the OTEL_* variables of `env` are replaced by
   * each mode's) and the tasks of each round, created as fast as the API takes them and, with
   * `steadyPerSecond`, in rounds of their own at that steady rate; undefined = the read only.
   */
  pipeline?: { ctx: PipelineContext; tasks: number; steadyPerSecond?: number | undefined } | undefined;
}

export async function tracingFigures(opts: TracingOptions): Promise<TracingFigures> {
  const { env, readPath, key, rounds, load } = opts;
  const sink = await startSink();
  const apis: Partial<Record<ApiMode, { child: ChildProcess; base: string }>> = {};
  try {
    for (const mode of opts.pipeline ? API_MODES : TRACING_MODES) {
      const port = await freePort();
      const child = await startApi({ ...env, ...otelEnv(mode, sink.url), PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }, `api-${mode}`);
      apis[mode] = { child, base: `http://127.0.0.1:${port}` };
    }
    const headers = { 'x-api-key': key };
    const url = (mode: TracingMode) => `${apis[mode]!.base}${readPath}`;
    if (opts.read) for (const mode of TRACING_MODES) await load(`warm-up ${mode}`, url(mode), headers);
    const rps: Record<TracingMode, number[]> = { disabled: [], unset: [], exporting: [], protobuf: [], sampled: [] };
    const costs: Record<TracingMode, number[]> = { disabled: [], unset: [], exporting: [], protobuf: [], sampled: [] };
    const cpuUs: Record<TracingMode, number[]> = { disabled: [], unset: [], exporting: [], protobuf: [], sampled: [] };
    const perRound: Array<Record<TracingMode, number>> = [];
    for (let r = 0; opts.read && r < rounds; r++) {
      const round: Partial<Record<TracingMode, number>> = {};
      for (const mode of turned(TRACING_MODES, r)) {
        const pid = apis[mode]!.child.pid!;
        const before = cpuMs(pid);
        const run = await load(`${mode}, round ${r + 1}`, url(mode), headers);
        cpuUs[mode].push((1000 * (cpuMs(pid) - before)) / run.requests);
        round[mode] = run.rps;
      }
      perRound.push(round as Record<TracingMode, number>);
      for (const mode of TRACING_MODES) {
        rps[mode].push(round[mode]!);
        costs[mode].push((100 * (round.disabled! - round[mode]!)) / round.disabled!);
      }
    }
    const exports = sink.requests();
    let pipeline: PipelineTracingFigures | undefined;
    let steady: PipelineTracingFigures | undefined;
    if (opts.pipeline) {
      const { ctx, tasks, steadyPerSecond } = opts.pipeline;
      const run = (mode: PipelineTracingMode, n: number, perSecond?: number) =>
        pipelineRun(
          { ...ctx, base: apis[mode]!.base, apiPid: apis[mode]!.child.pid!, env: { ...ctx.env, ...otelEnv(mode, sink.url) } },
          { workers: PIPELINE_WORKERS, dispatchers: PIPELINE_DISPATCHERS, tasks: n, perSecond },
        );
      // The APIs have served reads only: a short run each first, so no round pays for warming up creation.
      for (const mode of PIPELINE_TRACING_MODES) await run(mode, Math.min(tasks, 100));
      pipeline = await pipelineModes(sink, rounds, tasks, (mode) => run(mode, tasks));
      if (steadyPerSecond) steady = await pipelineModes(sink, rounds, tasks, (mode) => run(mode, tasks, steadyPerSecond), steadyPerSecond);
    }
    return {
      rps: { disabled: median(rps.disabled), unset: median(rps.unset), exporting: median(rps.exporting), protobuf: median(rps.protobuf), sampled: median(rps.sampled) },
      rounds: perRound,
      cpuUsPerRead: { disabled: median(cpuUs.disabled), unset: median(cpuUs.unset), exporting: median(cpuUs.exporting), protobuf: median(cpuUs.protobuf), sampled: median(cpuUs.sampled) },
      offCost: median(costs.unset),
      onCost: median(costs.exporting),
      protobufCost: median(costs.protobuf),
      sampledCost: median(costs.sampled),
      exports,
      pipeline,
      steady,
    };
  } finally {
    for (const api of Object.values(apis)) if (api) await stop(api.child);
    await sink.close();
  }
}
