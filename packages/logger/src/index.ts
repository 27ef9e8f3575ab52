import { EOL } from 'node:os';
import winston from 'winston';
import TransportStream from 'winston-transport';

export type Logger = winston.Logger;

/** Field names whose values are never written to a log line, whatever their nesting. */
const SENSITIVE = new Set([
  'password',
  'password_hash',
  'passwordhash',
  'plaintext_key',
  'plaintextkey',
  'api_key',
  'apikey',
  'x-api-key',
  'authorization',
  'cookie',
  'set-cookie',
  'token',
  'access_token',
  'webhook_secret',
  'webhooksecret',
  'secret',
  'jwt_secret',
  'secrets_key',
]);

const REDACTED = '[redacted]';
/** Anything shaped like one of our API keys (not just its 8-character prefix), webhook secrets or read tokens. */
const SECRET_PATTERN = /\b(sk-(?:live|test)-)[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9+/=]{8,}|\btrt_[A-Za-z0-9_-]{16,}/g;

function scrubString(s: string): string {
  // Every match holds one of these literally: most strings are returned without running the pattern.
  if (!s.includes('sk-') && !s.includes('whsec_') && !s.includes('trt_')) return s;
  return s.replace(SECRET_PATTERN, (m, keyPrefix: string | undefined) =>
    keyPrefix ? `${keyPrefix}${REDACTED}` : m.startsWith('trt_') ? `trt_${REDACTED}` : `whsec_${REDACTED}`,
  );
}

function scrub(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubString(value);
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) {
    return { name: value.name, message: scrubString(value.message), stack: value.stack ? scrubString(value.stack) : undefined };
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SENSITIVE.has(k.toLowerCase()) ? REDACTED : scrub(v, depth + 1);
  }
  return out;
}

/** Removes secrets by field name and by shape before a line is written. */
const redact = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (SENSITIVE.has(key.toLowerCase())) info[key] = REDACTED;
    else info[key] = scrub(info[key], 0);
  }
  if (typeof info.message === 'string') info.message = scrubString(info.message);
  return info;
});

export interface LoggerOptions {
  /** The process name written on every line (`api`, `worker`, `webhook-dispatcher`, `admin`). */
  service: string;
  level?: 'error' | 'warn' | 'info' | 'http' | 'debug' | 'silent';
  /** Where lines go; stdout by default. */
  stream?: NodeJS.WritableStream;
}

/** Levels written at once, with everything held before them: what a crash must not take along. */
const IMMEDIATE_LEVELS = new Set(['error', 'warn']);

/**
 * Lines on their way to one destination (stdout, or a test's stream). Info and debug lines of an
 * event-loop turn, winston's and the flat writers' alike, join one string that is written when the
 * turn ends (setImmediate) and at exit: one system call per turn instead of one per line, and no
 * stream bookkeeping per line. A warning or an error is written at once, after whatever was held,
 * so the lines stay in the order they were logged and a crash loses at most one turn's info lines.
 */
class LineBatch {
  private pending = '';
  private scheduled = false;

  constructor(private readonly out: NodeJS.WritableStream) {}

  add(text: string, level: string): void {
    this.pending += text;
    if (IMMEDIATE_LEVELS.has(level)) {
      this.flush();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    held.add(this);
    setImmediate(this.flush);
  }

  readonly flush = (): void => {
    this.scheduled = false;
    held.delete(this);
    const text = this.pending;
    this.pending = '';
    if (text) this.out.write(text);
  };
}

/** Batches holding lines, for the exit flush. */
const held = new Set<LineBatch>();
// At exit, what is still held is handed to its stream (a file or a terminal takes it at once; a
// pipe takes what fits, as for any write at exit).
process.once('exit', () => held.forEach((b) => b.flush()));

const batches = new WeakMap<NodeJS.WritableStream, LineBatch>();

/** The batch of a destination, shared by every logger writing there. */
function batchFor(out: NodeJS.WritableStream): LineBatch {
  let batch = batches.get(out);
  if (!batch) {
    batch = new LineBatch(out);
    batches.set(out, batch);
  }
  return batch;
}

const MESSAGE = Symbol.for('message');
const LEVEL = Symbol.for('level');

/** winston's output into a destination's batch: each formatted line with its level. */
class BatchTransport extends TransportStream {
  constructor(private readonly batch: LineBatch) {
    super();
  }

  override log(info: Record<string | symbol, unknown>, done: () => void): void {
    this.batch.add(`${String(info[MESSAGE])}${EOL}`, String(info[LEVEL]));
    done();
  }
}

/** What a planned line carries instead of its fields: its plan, and its values in the plan's order. */
const PLAN = Symbol('taskapi.line-plan');
const VALUES = Symbol('taskapi.line-values');

/** The fields every line has besides the caller's, and who fills them in. */
const LINE_FIELDS = ['service', 'level', 'message', 'timestamp'] as const;

interface LinePlan {
  messageText: string;
  /** In key order: each key's JSON prefix, and where its value comes from (a value index, or one of the line's own fields). */
  keys: Array<{ prefix: string; sensitive: boolean; source: (typeof LINE_FIELDS)[number] | number }>;
}

/** A value of a planned log line. */
export type FlatValue = string | number | boolean | null | undefined;

/** Each millisecond's timestamp text, made once (a busy process writes many lines per millisecond). */
let lastMs = -1;
let lastTimestamp = '';

/**
 * The JSON text of a planned line: what `redact`, `timestamp` and `json` make of the same fields
 * (keys sorted, undefined fields left out, secrets redacted by name and by shape), with the key
 * order and quoting worked out once per plan instead of per line.
 */
function renderPlanned(plan: LinePlan, info: Record<string | symbol, unknown>): string {
  const values = info[VALUES] as readonly FlatValue[];
  let line = '';
  for (const { prefix, sensitive, source } of plan.keys) {
    let text: string;
    if (source === 'service') text = JSON.stringify(scrubString(String(info.service)));
    else if (source === 'message') text = plan.messageText;
    else if (source === 'timestamp') {
      const ms = Date.now();
      if (ms !== lastMs) {
        lastMs = ms;
        lastTimestamp = `"${new Date(ms).toISOString()}"`;
      }
      text = lastTimestamp;
    } else {
      const value = source === 'level' ? info.level : values[source];
      // As winston's redaction: a sensitive field is "[redacted]" even when it has no value.
      if (sensitive) text = `"${REDACTED}"`;
      else if (value === undefined) continue;
      else text = JSON.stringify(typeof value === 'string' ? scrubString(value) : value);
    }
    line += `${line ? ',' : '{'}${prefix}${text}`;
  }
  return `${line}}`;
}

/**
 * The one format of every logger: a planned line (`flatLineWriter`) is serialised by its plan;
 * any other goes through winston's own redaction, timestamp and JSON formats.
 */
const standardFormat = winston.format.combine(redact(), winston.format.timestamp(), winston.format.json());
const lineFormat = winston.format((info) => {
  const plan = info[PLAN] as LinePlan | undefined;
  if (plan) {
    info[MESSAGE] = renderPlanned(plan, info);
    return info;
  }
  return standardFormat.transform(info, standardFormat.options);
});

/** A winston logger writing one JSON object per line to stdout, with secrets redacted. */
export function createLogger({ service, level = 'info', stream }: LoggerOptions): Logger {
  return winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    defaultMeta: { service },
    format: lineFormat(),
    transports: [new BatchTransport(batchFor(stream ?? process.stdout))],
  });
}

/**
 * A writer of one kind of line, through the logger like any other: `(level, values)` logs the line
 * whose fields are `fieldNames` (values in that order), serialised by a plan made once — the same
 * bytes as `logger.log(level, message, fields)`, without redacting and sorting the fields of every
 * line. For the lines written per request or per task (the access log, task starts and ends,
 * deliveries). The caller checks the level.
 */
export function flatLineWriter(logger: Logger, message: string, fieldNames: readonly string[]): (level: string, values: readonly FlatValue[]) => void {
  const clash = fieldNames.find((name) => (LINE_FIELDS as readonly string[]).includes(name));
  if (clash) throw new Error(`flatLineWriter: "${clash}" is written by the logger itself`);
  const twice = fieldNames.find((name, i) => fieldNames.indexOf(name) !== i);
  if (twice) throw new Error(`flatLineWriter: "${twice}" is named twice`);
  const plan: LinePlan = {
    messageText: JSON.stringify(scrubString(message)),
    keys: [...LINE_FIELDS, ...fieldNames].sort().map((key) => ({
      prefix: `${JSON.stringify(key)}:`,
      sensitive: SENSITIVE.has(key.toLowerCase()),
      source: (LINE_FIELDS as readonly string[]).includes(key) ? (key as (typeof LINE_FIELDS)[number]) : fieldNames.indexOf(key),
    })),
  };
  return (level, values) => {
    logger.log({ level, message, [PLAN]: plan, [VALUES]: values });
  };
}
