// A model's inputs as Cog declares them (the `Input` component of its OpenAPI schema), and the
// checks coglet runs before a prediction reaches the model (crates/coglet/src/input_validation.rs):
// unknown fields are dropped, a missing required field is `Field required`, anything else is the
// JSON Schema validator's sentence, all in pydantic's `detail` shape.

/** One input field. `required` fields have no default; the others get `default` when omitted. */
export type InputField =
  | { type: 'string'; required?: boolean; default?: string; format?: 'uri'; description?: string }
  | { type: 'integer'; required?: boolean; default?: number; minimum?: number; maximum?: number; description?: string };

/** A model's inputs by name, in the order Cog lists them (`x-order`). */
export type InputSchema = Record<string, InputField>;

/** One entry of a `422` body: `{"loc": ["body", "input", field], "msg", "type"}`. */
export interface InputError {
  field: string;
  msg: string;
  type: string;
}

/** The input as the model will get it (unknown fields dropped, defaults not yet applied), or why not. */
export type InputValidation = { input: Record<string, unknown> } | { errors: InputError[] };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The jsonschema crate's messages, which coglet passes on as they are.
function typeError(value: unknown, type: string): string {
  return `${JSON.stringify(value)} is not of type "${type}"`;
}

function fieldError(field: InputField, value: unknown): string | undefined {
  if (field.type === 'string') return typeof value === 'string' ? undefined : typeError(value, 'string');
  if (typeof value !== 'number' || !Number.isInteger(value)) return typeError(value, 'integer');
  if (field.minimum !== undefined && value < field.minimum) return `${value} is less than the minimum of ${field.minimum}`;
  if (field.maximum !== undefined && value > field.maximum) return `${value} is greater than the maximum of ${field.maximum}`;
  return undefined;
}

/** Drops unknown fields and checks the rest against `schema`, as coglet does before dispatching. */
export function validateInput(schema: InputSchema, raw: unknown): InputValidation {
  if (!isObject(raw)) return { errors: [{ field: '__root__', msg: typeError(raw, 'object'), type: 'value_error' }] };
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) if (Object.hasOwn(schema, name)) input[name] = value;
  const errors: InputError[] = [];
  for (const [name, field] of Object.entries(schema)) {
    if (field.required && !Object.hasOwn(input, name)) errors.push({ field: name, msg: 'Field required', type: 'value_error.missing' });
  }
  for (const [name, value] of Object.entries(input)) {
    const msg = fieldError(schema[name] as InputField, value);
    if (msg) errors.push({ field: name, msg, type: 'value_error' });
  }
  return errors.length ? { errors } : { input };
}

/** `input` with each omitted field at its default (what Python's signature does for a Cog model). */
export function withDefaults(schema: InputSchema, input: Record<string, unknown>): Record<string, unknown> {
  const out = { ...input };
  for (const [name, field] of Object.entries(schema)) {
    if (!Object.hasOwn(out, name) && field.default !== undefined) out[name] = field.default;
  }
  return out;
}

/** The `Input` component of the model's OpenAPI schema, as cog's schema generator writes it. */
export function openApiInput(schema: InputSchema): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  Object.entries(schema).forEach(([name, { required: _required, ...field }], order) => {
    const title = name
      .split('_')
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join(' ');
    properties[name] = { title, ...field, 'x-order': order };
  });
  const required = Object.entries(schema)
    .filter(([, field]) => field.required)
    .map(([name]) => name);
  return { type: 'object', title: 'Input', properties, ...(required.length ? { required } : {}) };
}
