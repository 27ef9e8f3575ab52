// A Cog model server in process: one model, served over HTTP the way a Cog container serves it
// (docs/http.md of replicate/cog; coglet's routes, webhooks and prediction JSON), backed by our
// built-in engines and a few models that misbehave on purpose.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HealthStatus } from './health';
import type { CogModel } from './model';
import { createModel, type ModelName, type ModelOptions } from './models';
import { OutputFiles, type OutputAs } from './output-files';
import { PredictionService, type PredictionRecord } from './prediction-service';
import { createRoutes } from './routes';

/** Options of {@link startCogServer}. */
export interface CogServerOptions extends ModelOptions {
  /** The model, by name or built by the test (one per server, as one per container). */
  model: ModelName | CogModel;
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Prediction slots (Cog's `@cog.concurrent(max=N)`). Default 1. */
  concurrency?: number;
  /** How long `/health-check` reports STARTING before READY (the model's setup). Default 0. */
  setupMs?: number;
  /** Overrides whether the model answers `Accept: text/event-stream` (else `406`). */
  streaming?: boolean;
  /** File outputs as `data:` URLs (default) or as URLs served from this server's `/_files`. */
  outputAs?: OutputAs;
  /** SSE replay buffer per prediction (coglet's `COG_STREAM_HISTORY_CAPACITY`). Default 1024. */
  historyCapacity?: number;
  /** Minimum time between `start`/`logs` webhooks. Default 500 ms, as coglet. */
  webhookThrottleMs?: number;
  /** The terminal webhook's backoff base: retry n after `base * 2^n`. Default 100 ms, as coglet. */
  webhookBackoffMs?: number;
  /** Retries of the terminal webhook. Default 12, as coglet. */
  webhookMaxRetries?: number;
  /** `Authorization: Bearer` on webhooks (coglet's `WEBHOOK_AUTH_TOKEN`). */
  webhookAuthToken?: string;
  /** `/openapi.json` served as this text (any, even not JSON), or a 404 with null; default: built from the model's inputs. */
  openapi?: string | null;
}

export interface CogServer {
  /** `http://host:port`. */
  url: string;
  port: number;
  /** Every prediction created since start (or the last reset), oldest first. */
  predictions(): PredictionRecord[];
  /** `PUT /predictions/{id}` requests per id, whatever came of them. */
  putRequests(): Record<string, number>;
  /** Forces `/health-check`'s status (and what follows from it), or back to the real one with null. */
  setHealth(status: HealthStatus | null): void;
  /** Serves `/openapi.json` as this text, a 404 with null, or the model's own again with undefined. */
  setOpenApi(text: string | null | undefined): void;
  /** Cancels what runs, forgets every record and file, health back to automatic. */
  reset(): void;
  /** Cuts every open event stream's connection (a network fault); returns how many were cut. */
  cutStreams(): number;
  /** Stops at once: in-flight predictions are dropped, no further webhooks are sent. */
  close(): Promise<void>;
  /** Resolves when the server has closed (by `close()` or `POST /shutdown`). */
  readonly closed: Promise<void>;
}

/** Starts a Cog server; it answers at once, reporting STARTING until the model's setup is done. */
export async function startCogServer(opts: CogServerOptions): Promise<CogServer> {
  const built = typeof opts.model === 'string' ? createModel(opts.model, opts) : opts.model;
  const model: CogModel = { ...built, streaming: opts.streaming ?? built.streaming };
  const host = opts.host ?? '127.0.0.1';
  let baseUrl = '';
  const files = new OutputFiles(opts.outputAs ?? 'data-url', () => baseUrl);
  const service = new PredictionService(model, {
    concurrency: opts.concurrency ?? 1,
    historyCapacity: opts.historyCapacity ?? 1024,
    webhooks: {
      throttleMs: opts.webhookThrottleMs ?? 500,
      backoffBaseMs: opts.webhookBackoffMs ?? 100,
      maxRetries: opts.webhookMaxRetries ?? 12,
      authToken: opts.webhookAuthToken,
    },
    files,
  });

  const setupAbort = new AbortController();
  let closing: Promise<void> | undefined;
  const server = http.createServer();
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      setupAbort.abort();
      service.close();
      server.close(() => resolve());
      server.closeAllConnections();
    }));
  const streams = new Set<http.ServerResponse>();
  let openapi = opts.openapi;
  const routes = createRoutes({ model, service, files, shutdown: () => void close(), streams, openapi: () => openapi });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    routes(req, res).catch((err: unknown) => {
      // A bug in this server: answer 500 like axum's panic handler, or cut a response already begun.
      if (res.headersSent) res.destroy(err as Error);
      else res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  baseUrl = `http://${urlHost}:${port}`;

  void (async () => {
    const started = performance.now();
    try {
      await sleep(opts.setupMs ?? 0, undefined, { signal: setupAbort.signal });
      await model.setup?.();
      service.health.setupDone('succeeded', `Model ${model.name} set up in ${Math.round(performance.now() - started)} ms.\n`);
    } catch (err) {
      if (!setupAbort.signal.aborted) service.health.setupDone('failed', `setup() failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  })();

  return {
    url: baseUrl,
    port,
    predictions: () => service.recorded(),
    putRequests: () => service.putRequests(),
    setHealth: (status) => service.health.force(status),
    setOpenApi: (text) => (openapi = text),
    reset: () => service.reset(),
    cutStreams() {
      const open = [...streams];
      for (const res of open) res.socket?.destroy();
      return open.length;
    },
    close,
    closed,
  };
}
