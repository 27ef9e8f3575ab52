// The customers during the chaos: concurrent clients creating tasks with an Idempotency-Key and
// retrying on 503, 429, 5xx and network errors with the same key (as the SDK does), so a retried
// creation is never a second task; some tasks are cancelled or read back. Every status code seen
// is counted; what each client ended up believing is kept for the audit.
import { setTimeout as delay } from 'node:timers/promises';
import type { Payer } from './accounts';
import { FAIL_MARK, FLAKY_MARK } from './model-server';
import type { Random } from './random';

export type Operation = 'create' | 'read' | 'cancel';

/** One task a client meant to create, and what it learned. */
export interface Creation {
  seq: number;
  payer: Payer;
  kind: 'image-generation' | 'video-generation';
  /** What the model server will do with it (image tasks are always `ok`: the built-in engine). */
  fate: 'ok' | 'fail' | 'flaky';
  callbackUrl: string | null;
  cancel: boolean;
  read: boolean;
  idempotencyKey: string;
  /** The task the API answered 201 for. */
  publicId?: string;
  /** Why the client stopped trying (no answer within the give-up time, or a refusal). */
  gaveUp?: string;
  /** 200 (cancelled) or 409 (already finished). */
  cancelAnswer?: number;
  /** The status a successful GET showed. */
  readStatus?: number;
}

export interface UnexpectedAnswer {
  op: Operation;
  status: number;
  message: string;
}

export interface LoadFigures {
  /** Status codes by operation; network failures under `network`. */
  statuses: Record<Operation, Map<number | 'network', number>>;
  /** Network failures by cause (ECONNREFUSED, ECONNRESET, timeout…). */
  networkCauses: Map<string, number>;
  /** When each 503 was answered (ms since the epoch). */
  answered503At: number[];
  /** Answers no client should see (anything but 200/201, 409 on cancel, 429, 503). */
  unexpected: UnexpectedAnswer[];
  /** Creations answered from their Idempotency-Key (an earlier attempt had created the task). */
  replayed: number;
}

/** Sequence numbers of probe creations start here (above any run's planned creations). */
const PROBE_SEQ_BASE = 1_000_000;

/** A client stops retrying one request after this long; the system should be back well before. */
const GIVE_UP_MS = 90_000;
const REQUEST_TIMEOUT_MS = 20_000;

export function planCreations(random: Random, count: number, payers: readonly Payer[], callbackUrl: string, runId: string): Creation[] {
  return Array.from({ length: count }, (_, seq) => {
    const video = random.chance(0.25);
    const roll = random.next();
    const fate: Creation['fate'] = !video ? 'ok' : roll < 0.4 ? 'fail' : roll < 0.52 ? 'flaky' : 'ok';
    return {
      seq,
      payer: payers[seq % payers.length] as Payer,
      kind: video ? 'video-generation' : 'image-generation',
      fate,
      callbackUrl: random.chance(0.9) ? callbackUrl : null,
      cancel: random.chance(0.06),
      read: random.chance(0.1),
      idempotencyKey: `chaos-${runId}-${seq}`,
    };
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function causeOf(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; name?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  return e.cause?.code ?? e.code ?? e.cause?.name ?? e.name ?? 'unknown';
}

export class Load {
  readonly figures: LoadFigures = {
    statuses: { create: new Map(), read: new Map(), cancel: new Map() },
    networkCauses: new Map(),
    answered503At: [],
    unexpected: [],
    replayed: 0,
  };
  private next = 0;
  private finished = 0;
  /** Creations made by the monkey's probes after failovers (checked by the audit like the others). */
  readonly probes: Creation[] = [];

  constructor(
    private readonly baseUrl: string,
    readonly creations: Creation[],
  ) {}

  /** Creations that have an outcome (a task or giving up). */
  get done(): number {
    return this.finished;
  }

  /** Runs `clients` clients until every creation has an outcome; creation i starts at `startAt + i * spacingMs`. */
  async run(clients: number, startAt: number, spacingMs: number): Promise<void> {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (this.next < this.creations.length) {
          const creation = this.creations[this.next++] as Creation;
          const wait = startAt + creation.seq * spacingMs - Date.now();
          if (wait > 0) await delay(wait);
          await this.serve(creation);
          this.finished++;
        }
      }),
    );
  }

  /**
   * A probe after a failover: one image task with a callback, created (and retried) like any
   * client's; resolves with its public id once answered 201, or undefined when the client gave up.
   */
  async probe(payer: Payer, callbackUrl: string, runId: string): Promise<string | undefined> {
    const seq = PROBE_SEQ_BASE + this.probes.length;
    const c: Creation = { seq, payer, kind: 'image-generation', fate: 'ok', callbackUrl, cancel: false, read: false, idempotencyKey: `chaos-${runId}-probe-${seq}` };
    this.probes.push(c);
    await this.serve(c);
    return c.publicId;
  }

  private async serve(c: Creation): Promise<void> {
    const prompt = `chaos task ${c.seq}${c.fate === 'fail' ? ` ${FAIL_MARK}` : c.fate === 'flaky' ? ` ${FLAKY_MARK}` : ''}`;
    const body: Record<string, unknown> =
      c.kind === 'image-generation' ? { prompt, width: 64, height: 64 } : { prompt, duration_seconds: 1 };
    if (c.callbackUrl) body.callback_url = c.callbackUrl;
    body.payload = { chaos_seq: c.seq };
    const created = await this.send('create', 'POST', `/api/tasks/${c.kind}`, c.payer, body, { 'idempotency-key': c.idempotencyKey });
    if ('gaveUp' in created) {
      c.gaveUp = created.gaveUp;
      return;
    }
    if (created.status !== 201) {
      c.gaveUp = `answered ${created.status}`;
      return;
    }
    c.publicId = (created.json as { public_id: string }).public_id;
    if (created.replayed) this.figures.replayed++;
    if (c.cancel) {
      await delay(Math.floor(Math.random() * 300));
      const cancelled = await this.send('cancel', 'POST', `/api/tasks/${c.publicId}/cancel`, c.payer);
      if ('status' in cancelled) c.cancelAnswer = cancelled.status;
    }
    if (c.read) {
      const read = await this.send('read', 'GET', `/api/tasks/${c.publicId}`, c.payer);
      if ('status' in read && read.status === 200) c.readStatus = (read.json as { status: number }).status;
    }
  }

  private count(op: Operation, status: number | 'network'): void {
    const m = this.figures.statuses[op];
    m.set(status, (m.get(status) ?? 0) + 1);
  }

  /** One request, retried with the same key and body until it gets a final answer or gives up. */
  private async send(
    op: Operation,
    method: 'GET' | 'POST',
    path: string,
    payer: Payer,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<{ status: number; json: unknown; replayed: boolean } | { gaveUp: string }> {
    const deadline = Date.now() + GIVE_UP_MS;
    const headers: Record<string, string> = { 'x-api-key': payer.apiKey, ...extraHeaders };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let last: string;
    for (let attempt = 0; ; attempt++) {
      let waitMs = Math.min(2_000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
      try {
        const res = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        this.count(op, res.status);
        last = `HTTP ${res.status}`;
        if (res.status === 503) this.figures.answered503At.push(Date.now());
        const retryable = res.status === 429 || res.status >= 500;
        const expected = res.status === 200 || res.status === 201 || res.status === 429 || res.status === 503 || (op === 'cancel' && res.status === 409);
        if (!expected) this.figures.unexpected.push({ op, status: res.status, message: text.slice(0, 300) });
        if (!retryable) return { status: res.status, json: parseJson(text), replayed: res.headers.get('idempotent-replayed') === 'true' };
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) waitMs = Math.min(5_000, retryAfter * 1000);
      } catch (err) {
        const cause = causeOf(err);
        this.count(op, 'network');
        this.figures.networkCauses.set(cause, (this.figures.networkCauses.get(cause) ?? 0) + 1);
        last = cause;
      }
      if (Date.now() + waitMs > deadline) return { gaveUp: `no answer within ${GIVE_UP_MS / 1000} s (last: ${last})` };
      await delay(waitMs);
    }
  }
}
