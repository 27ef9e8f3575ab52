import { EOL } from 'node:os';
import type { Writable } from 'node:stream';
import winston from 'winston';

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
  'webhook_secret',
  'webhooksecret',
  'secret',
  'jwt_secret',
  'secrets_key',
]);

const REDACTED = '[redacted]';
/** Anything shaped like one of our API keys (not just its 8-character prefix) or webhook secrets. */
const SECRET_PATTERN = /\b(sk-(?:live|test)-)[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9+/=]{8,}/g;

function scrubString(s: string): string {
  return s.replace(SECRET_PATTERN, (m, keyPrefix: string | undefined) => (keyPrefix ? `${keyPrefix}${REDACTED}` : `whsec_${REDACTED}`));
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

/** Where each logger made by `createLogger` writes, for `logFlatLine`. */
const destinations = new WeakMap<Logger, { service: string; stream: NodeJS.WritableStream | undefined }>();

/** A winston logger writing one JSON object per line to stdout, with secrets redacted. */
export function createLogger({ service, level = 'info', stream }: LoggerOptions): Logger {
  const logger = winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    defaultMeta: { service },
    format: winston.format.combine(redact(), winston.format.timestamp(), winston.format.json()),
    transports: [stream ? new winston.transports.Stream({ stream }) : new winston.transports.Console()],
  });
  destinations.set(logger, { service, stream });
  return logger;
}

/** A value of a flat log line. */
export type FlatValue = string | number | boolean | null | undefined;

/**
 * `logger.log(level, message, fields)` for a line of flat fields, written straight to the logger's
 * destination: the same JSON text winston writes (keys sorted, undefined fields left out, secrets
 * redacted by name and by shape, `service` and `timestamp` added), without winston's format chain
 * and object streams, which cost more than the request they describe. For the one line per request
 * of the access log. Loggers not made by `createLogger` get `logger.log`. The caller checks the level.
 */
export function logFlatLine(logger: Logger, level: string, message: string, fields: Record<string, FlatValue>): void {
  const destination = destinations.get(logger);
  if (!destination) {
    logger.log(level, message, fields);
    return;
  }
  if (logger.silent) return;
  const all: Record<string, FlatValue> = { service: destination.service, ...fields, level, message, timestamp: new Date().toISOString() };
  let line = '';
  for (const key of Object.keys(all).sort()) {
    const value = all[key];
    if (value === undefined) continue;
    const text = SENSITIVE.has(key.toLowerCase()) ? REDACTED : typeof value === 'string' ? scrubString(value) : value;
    line += `${line ? ',' : '{'}${JSON.stringify(key)}:${JSON.stringify(text)}`;
  }
  line += `}${EOL}`;
  writeBatched(destination.stream ?? process.stdout, line);
}

/** Destinations holding lines until the end of this turn of the event loop. */
const held = new Set<Writable>();
let exitHooked = false;

/**
 * Writes a line, sending every line of this event-loop turn in one system call: the stream is
 * corked at the first line and uncorked by setImmediate (and at exit, where stdout writes are
 * synchronous). Other lines written meanwhile (winston's) queue behind in the same stream, so the
 * order is kept.
 */
function writeBatched(out: NodeJS.WritableStream, line: string): void {
  const stream = out as Writable;
  if (!held.has(stream) && typeof stream.cork === 'function') {
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', () => held.forEach((s) => s.uncork()));
    }
    held.add(stream);
    stream.cork();
    setImmediate(() => {
      held.delete(stream);
      stream.uncork();
    });
  }
  stream.write(line);
}
