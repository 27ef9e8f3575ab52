// The HTTP edge, route for route as coglet's (crates/coglet/src/transport/http/routes.rs), with
// its status codes and bodies; plus `/_files` (URL outputs) and the test controls under `/_test`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HEALTH_STATUSES, type HealthStatus } from './health';
import { readBody, sendEmpty, sendJson, sendText } from './http-io';
import { openApiInput } from './input-schema';
import type { CogModel } from './model';
import type { OutputFiles } from './output-files';
import { parsePredictionRequest, type PredictionRequest } from './prediction-request';
import type { InFlight, PredictionService } from './prediction-service';
import { MAX_STREAM_SUBSCRIBERS, streamPrediction } from './sse';
import { COGLET_VERSION } from './webhook-sender';

// coglet's exact sentences.
const NOT_READY = 'Setup has not finished yet. Wait until it has finished, or GET /health-check for status.';
const AT_CAPACITY = 'At capacity - all prediction slots busy';
const NO_STREAMING = 'This model does not support streaming responses. Add @cog.streaming to predict() to enable SSE.';

type Mode = 'sync' | 'async' | 'sse';

export interface RouteDeps {
  model: CogModel;
  service: PredictionService;
  files: OutputFiles;
  /** `POST /shutdown`: stop the server (after the answer). */
  shutdown(): void;
  /** The event streams open now (so a test can cut them, as a proxy or a network fault would). */
  streams: Set<ServerResponse>;
  /** `/openapi.json` as a test set it: its text, null for none (404), undefined for the model's own. */
  openapi?: () => string | null | undefined;
}

// Accept naming text/event-stream wins over Prefer: respond-async (prediction_response_mode).
function responseMode(req: IncomingMessage): Mode {
  const accept = req.headers.accept ?? '';
  if (accept.split(',').some((part) => part.trim().split(';')[0] === 'text/event-stream')) return 'sse';
  return req.headers.prefer === 'respond-async' ? 'async' : 'sync';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

// coglet's ids when the request has none: `pred_` and the time in nanoseconds, in hex.
let lastId = 0n;
function generatePredictionId(): string {
  const now = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  lastId = now > lastId ? now : lastId + 1n;
  return `pred_${lastId.toString(16)}`;
}

export function createRoutes(deps: RouteDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { model, service, files } = deps;

  function stream(res: ServerResponse, entry: InFlight): void {
    if (entry.prediction.subscribers >= MAX_STREAM_SUBSCRIBERS) return sendJson(res, 429, { error: 'Too many stream subscribers' });
    deps.streams.add(res);
    streamPrediction(res, entry.prediction, () => {
      deps.streams.delete(res);
      service.streamClosed(entry);
    });
  }

  async function create(req: IncomingMessage, res: ServerResponse, id: string, request: PredictionRequest, mode: Mode, byPut: boolean): Promise<void> {
    if (mode === 'sse' && !model.streaming) return sendJson(res, 406, { error: NO_STREAMING });
    const validation = model.validate(request.input);
    if ('errors' in validation) {
      const detail = validation.errors.map((e) => ({ loc: ['body', 'input', e.field], msg: e.msg, type: e.type }));
      return sendJson(res, 422, { detail });
    }
    const trace = { traceparent: header(req, 'traceparent'), tracestate: header(req, 'tracestate') };
    const webhook = request.webhook === undefined ? undefined : { url: request.webhook, events: request.webhookEventsFilter, trace };
    const submitted = service.submit(id, validation.input, { webhook, forStream: mode === 'sse', byPut, traceparent: trace.traceparent });
    if ('refused' in submitted) {
      if (submitted.refused === 'not-ready') return sendJson(res, 503, { error: NOT_READY, status: 'failed' });
      return sendJson(res, 409, { error: AT_CAPACITY, status: 'failed' });
    }
    const entry = submitted.inFlight;
    if (mode === 'async') return sendJson(res, 202, { id, status: 'starting' });
    if (mode === 'sse') return stream(res, entry);
    // Sync: the client going away cancels the prediction (coglet's SyncPredictionGuard).
    res.once('close', () => {
      if (!res.writableFinished) service.clientGone(entry);
    });
    const { prediction } = entry;
    await prediction.settled;
    if (res.destroyed) return;
    const { output = null, error, logs, metrics } = prediction.snapshot();
    // coglet answers 200 whatever the outcome ("prediction failure is data, not HTTP error"), and
    // sends `logs: ""` when the prediction failed or was canceled, whatever it logged (we follow the code).
    if (prediction.status === 'succeeded') return sendJson(res, 200, { id, output, logs, status: 'succeeded', metrics });
    if (prediction.status === 'failed') return sendJson(res, 200, { id, error, logs: '', status: 'failed', metrics });
    return sendJson(res, 200, { id, logs: '', status: 'canceled', metrics });
  }

  async function readRequest(req: IncomingMessage, res: ServerResponse): Promise<PredictionRequest | undefined> {
    const body = await readBody(req);
    if (body === undefined) {
      sendText(res, 413, 'Failed to buffer the request body: length limit exceeded');
      return undefined;
    }
    const parsed = parsePredictionRequest(req.headers['content-type'], body);
    if ('request' in parsed) return parsed.request;
    sendText(res, parsed.status, parsed.text);
    return undefined;
  }

  async function createPrediction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req, res);
    if (!request) return;
    // POST is not idempotent: an id already in flight is not looked up (coglet does not either).
    await create(req, res, request.id ?? generatePredictionId(), request, responseMode(req), false);
  }

  async function createIdempotent(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    service.countPut(id);
    const request = await readRequest(req, res);
    if (!request) return;
    if (request.id !== undefined && request.id !== id) {
      return sendJson(res, 422, { detail: [{ loc: ['body', 'id'], msg: 'prediction ID must match the ID supplied in the URL', type: 'value_error' }] });
    }
    const mode = responseMode(req);
    const existing = service.find(id);
    if (!existing) return create(req, res, id, request, mode, true);
    // In flight: its state as JSON (whatever the request asked for), or its stream.
    if (mode !== 'sse') return sendJson(res, 202, { ...existing.prediction.snapshot(), input: existing.record.input });
    if (!model.streaming) return sendJson(res, 406, { error: NO_STREAMING });
    stream(res, existing);
  }

  function root(res: ServerResponse): void {
    sendJson(res, 200, {
      cog_version: COGLET_VERSION, // no Python SDK here, so coglet's own version (as coglet falls back)
      docs_url: '/docs',
      openapi_url: '/openapi.json',
      shutdown_url: '/shutdown',
      healthcheck_url: '/health-check',
      predictions_url: '/predictions',
      predictions_idempotent_url: '/predictions/{prediction_id}',
      predictions_cancel_url: '/predictions/{prediction_id}/cancel',
    });
  }

  function openapi(res: ServerResponse): void {
    // A test's own document (any text, even not JSON), or none at all (404).
    const served = deps.openapi?.();
    if (served === null) return sendJson(res, 404, { detail: 'Not Found' });
    if (served !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(served);
    }
    sendJson(res, 200, {
      openapi: '3.0.2',
      info: { title: 'Cog', version: '0.1.0' },
      paths: { '/predictions': { post: { summary: 'Predict', operationId: 'predict_predictions_post', 'x-cog-streaming': model.streaming } } },
      components: { schemas: { Input: openApiInput(model.inputSchema) } },
    });
  }

  async function forceHealth(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let status: unknown;
    try {
      status = (JSON.parse((await readBody(req))?.toString('utf8') ?? '') as { status?: unknown }).status;
    } catch (err) {
      return sendJson(res, 400, { error: `the body must be JSON {"status": ...}: ${(err as Error).message}` });
    }
    if (status !== null && !(HEALTH_STATUSES as readonly unknown[]).includes(status)) {
      return sendJson(res, 400, { error: `status must be null or one of ${HEALTH_STATUSES.join(', ')}` });
    }
    service.health.force(status as HealthStatus | null);
    sendJson(res, 200, service.health.body(service.freeSlots));
  }

  function file(res: ServerResponse, predictionId: string, name: string): void {
    const found = files.get(predictionId, name);
    if (!found) return sendJson(res, 404, {});
    res.writeHead(200, { 'content-type': found.contentType, 'content-length': found.data.length });
    res.end(found.data);
  }

  // Routes by path; each path's methods (a known path with another method is 405, as axum answers).
  type Handler = (req: IncomingMessage, res: ServerResponse, params: string[]) => void | Promise<void>;
  const routes: Array<[RegExp, Record<string, Handler>]> = [
    [/^\/$/, { GET: (_req, res) => root(res) }],
    [/^\/health-check$/, { GET: (_req, res) => sendJson(res, 200, service.health.body(service.freeSlots)) }],
    [/^\/openapi\.json$/, { GET: (_req, res) => openapi(res) }],
    [
      /^\/shutdown$/,
      {
        POST: (_req, res) => {
          sendJson(res, 200, {});
          res.once('finish', deps.shutdown);
        },
      },
    ],
    [/^\/predictions$/, { POST: createPrediction }],
    [/^\/predictions\/([^/]+)$/, { PUT: (req, res, [id]) => createIdempotent(req, res, id as string) }],
    [/^\/predictions\/([^/]+)\/cancel$/, { POST: (_req, res, [id]) => sendJson(res, service.cancel(id as string) ? 200 : 404, {}) }],
    [/^\/_files\/([^/]+)\/([^/]+)$/, { GET: (_req, res, [id, name]) => file(res, id as string, name as string) }],
    [/^\/_test\/predictions$/, { GET: (_req, res) => sendJson(res, 200, { predictions: service.recorded(), putRequests: service.putRequests() }) }],
    [/^\/_test\/health$/, { POST: forceHealth }],
    [
      /^\/_test\/reset$/,
      {
        POST: (_req, res) => {
          service.reset();
          sendJson(res, 200, {});
        },
      },
    ],
  ];

  return async (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://cog').pathname;
    for (const [pattern, methods] of routes) {
      const match = pattern.exec(pathname);
      if (!match) continue;
      const handler = methods[req.method ?? 'GET'];
      if (!handler) return sendEmpty(res, 405, { allow: Object.keys(methods).join(',') });
      let params: string[];
      try {
        params = match.slice(1).map((p) => decodeURIComponent(p));
      } catch {
        return sendText(res, 400, 'Invalid URL: cannot parse percent-encoded path parameter');
      }
      return handler(req, res, params);
    }
    sendEmpty(res, 404);
  };
}
