// The body of `POST /predictions` and `PUT /predictions/{id}` as coglet reads it
// (PredictionRequest in routes.rs, extracted as axum's `Option<Json<_>>`): no Content-Type means no
// body (every field at its default); another Content-Type is 415; bad JSON is 400; JSON of the wrong
// shape is 422, as plain text. (axum's messages also give a line and column; ours do not.)
import { WEBHOOK_EVENTS, type WebhookEvent } from './webhook-sender';

export interface PredictionRequest {
  id?: string;
  /** Anything; null and missing are `{}`. */
  input: unknown;
  webhook?: string;
  /** Default: every event. */
  webhookEventsFilter: WebhookEvent[];
}

export type ParsedPredictionRequest = { request: PredictionRequest } | { status: 400 | 415 | 422; text: string };

// What serde calls a JSON value in "invalid type: X, expected Y".
function serdeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'sequence';
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (typeof value === 'boolean') return `boolean \`${value}\``;
  if (typeof value === 'number') return Number.isInteger(value) ? `integer \`${value}\`` : `floating point \`${value}\``;
  return 'map';
}

class ShapeError extends Error {}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ShapeError(`${field}: invalid type: ${serdeKind(value)}, expected a string`);
  return value;
}

function eventsFilter(value: unknown): WebhookEvent[] {
  if (value === undefined) return [...WEBHOOK_EVENTS]; // serde's default only applies when the field is missing
  if (!Array.isArray(value)) throw new ShapeError(`webhook_events_filter: invalid type: ${serdeKind(value)}, expected a sequence`);
  return value.map((event: unknown, i) => {
    if (typeof event !== 'string') throw new ShapeError(`webhook_events_filter[${i}]: invalid type: ${serdeKind(event)}, expected a string`);
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(event)) {
      const expected = WEBHOOK_EVENTS.map((e) => `\`${e}\``).join(', ');
      throw new ShapeError(`webhook_events_filter[${i}]: unknown variant \`${event}\`, expected one of ${expected}`);
    }
    return event as WebhookEvent;
  });
}

function checkContext(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ShapeError(`context: invalid type: ${serdeKind(value)}, expected a map`);
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new ShapeError(`context.${key}: invalid type: ${serdeKind(v)}, expected a string`);
  }
}

function isJsonContentType(contentType: string): boolean {
  const mime = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

export function parsePredictionRequest(contentType: string | undefined, body: Buffer): ParsedPredictionRequest {
  if (contentType === undefined) return { request: { input: {}, webhookEventsFilter: [...WEBHOOK_EVENTS] } };
  if (!isJsonContentType(contentType)) return { status: 415, text: 'Expected request with `Content-Type: application/json`' };
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { status: 400, text: `Failed to parse the request body as JSON: ${(err as Error).message}` };
  }
  try {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      throw new ShapeError(`invalid type: ${serdeKind(json)}, expected struct PredictionRequest`);
    }
    const fields = json as Record<string, unknown>;
    checkContext(fields.context);
    const request: PredictionRequest = {
      input: fields.input ?? {},
      webhookEventsFilter: eventsFilter(fields.webhook_events_filter),
    };
    const id = optionalString(fields, 'id');
    const webhook = optionalString(fields, 'webhook');
    if (id !== undefined) request.id = id;
    if (webhook !== undefined) request.webhook = webhook;
    return { request };
  } catch (err) {
    if (!(err instanceof ShapeError)) throw err;
    return { status: 422, text: `Failed to deserialize the JSON body into the target type: ${err.message}` };
  }
}
