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

/** A winston logger writing one JSON object per line to stdout, with secrets redacted. */
export function createLogger({ service, level = 'info', stream }: LoggerOptions): Logger {
  return winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    defaultMeta: { service },
    format: winston.format.combine(redact(), winston.format.timestamp(), winston.format.json()),
    transports: [stream ? new winston.transports.Stream({ stream }) : new winston.transports.Console()],
  });
}
