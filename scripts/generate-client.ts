// `npm run generate:client`: writes packages/client/src/generated.ts, the SDK's request and response
// types, from the API's route registry (the same zod schemas the server validates with and the
// OpenAPI document is built from). A test (packages/client/test/generated.test.ts) fails when the
// committed file differs from a fresh generation, so the server and the SDK cannot drift apart.
//
// A small emitter for the JSON Schema subset zod produces (objects, arrays, unions, enums, consts,
// references, nullable), rather than a general converter: the output is plain, stable and readable.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { TASK_KINDS } from '@taskapi/task-kinds';
import { ROUTES } from '../services/api/src/routes/index';
import type { Route } from '../services/api/src/http/route';
import {
  batchExceedsRateLimitSchema,
  errorSchema,
  expiredTrialKeySchema,
  insufficientCreditsSchema,
  rateLimitedSchema,
  spendLimitReachedSchema,
  validationErrorSchema,
} from '../services/api/src/schemas/errors';
import { webhookEventSchema } from '../services/api/src/schemas/tasks';
import { NEWEST_VERSION } from '../services/api/src/versions/registry';

type Json = { [key: string]: unknown };

export const GENERATED_FILE = path.resolve(__dirname, '../packages/client/src/generated.ts');

/** Component ids that would shadow a global type in the SDK. */
const RENAMED: Record<string, string> = { Error: 'ErrorBody' };
const typeName = (id: string) => RENAMED[id] ?? id;

function route(method: Route['method'], routePath: string): Route {
  const found = ROUTES.find((r) => r.method === method && r.path === routePath);
  if (!found) throw new Error(`route ${method.toUpperCase()} ${routePath} is not in the registry`);
  return found;
}

/** JSON Schemas by component id; every schema with `.meta({ id })` is hoisted here. */
class Components {
  readonly defs = new Map<string, Json>();

  add(schema: z.ZodType, io: 'input' | 'output', name?: string): string {
    const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', metadata: z.globalRegistry }) as Json;
    const { $schema: _schema, $defs, ...root } = out as Json & { $defs?: Record<string, Json> };
    for (const [id, def] of Object.entries($defs ?? {})) this.put(id, def);
    const id = typeof root.$ref === 'string' && Object.keys(root).length === 1 ? root.$ref.replace('#/$defs/', '') : undefined;
    if (id && !name) return id;
    if (!name) throw new Error('a schema without a component id needs a name');
    this.put(name, id ? { $ref: `#/$defs/${id}` } : root);
    return name;
  }

  private put(id: string, def: Json) {
    const known = this.defs.get(id);
    if (known && JSON.stringify(known) !== JSON.stringify(def)) throw new Error(`component ${id} has two different shapes`);
    this.defs.set(id, def);
  }
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function doc(description: unknown, indent: string): string {
  if (typeof description !== 'string' || description === '') return '';
  const lines = description.replaceAll('*/', '*\\/').split('\n');
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join('\n')}\n${indent} */\n`;
}

/** The TypeScript type of a JSON Schema (the subset zod emits). */
function tsType(s: Json, indent: string): string {
  if (typeof s.$ref === 'string') return typeName(s.$ref.replace('#/$defs/', ''));
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (union) return [...new Set(union.map((member) => tsType(member, indent)))].join(' | ');
  if (Array.isArray(s.type)) return s.type.map((t) => tsType({ ...s, type: t }, indent)).join(' | ');
  switch (s.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const item = tsType((s.items as Json | undefined) ?? {}, indent);
      return /^[\w$"]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
    }
    case 'object':
      return objectType(s, indent);
    case undefined:
      return 'unknown';
    default:
      throw new Error(`unsupported JSON Schema type ${JSON.stringify(s.type)}`);
  }
}

function objectType(s: Json, indent: string): string {
  const properties = (s.properties ?? {}) as Record<string, Json>;
  const required = new Set((s.required ?? []) as string[]);
  const inner = `${indent}  `;
  const members = Object.entries(properties).map(([key, property]) => {
    const name = IDENT.test(key) ? key : JSON.stringify(key);
    return `${doc(property.description, inner)}${inner}${name}${required.has(key) ? '' : '?'}: ${tsType(property, inner)};\n`;
  });
  const extra = s.additionalProperties;
  if (extra !== undefined && extra !== false) members.push(`${inner}[key: string]: ${extra === true ? 'unknown' : tsType(extra as Json, inner)};\n`);
  if (members.length === 0) return extra === undefined || extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
  if (Object.keys(properties).length === 0 && extra !== undefined && extra !== false) return `Record<string, ${extra === true ? 'unknown' : tsType(extra as Json, inner)}>`;
  return `{\n${members.join('')}${indent}}`;
}

function declaration(id: string, s: Json): string {
  const name = typeName(id);
  const body = tsType(s, '');
  const isObject = s.type === 'object' && body.startsWith('{');
  return `${doc(s.description, '')}${isObject ? `export interface ${name} ${body}` : `export type ${name} = ${body};`}\n`;
}

const COMPONENT_PREFIX = { input: 'Create', output: '' };

/** The text of packages/client/src/generated.ts. */
export function generateClientTypes(): string {
  const components = new Components();
  const createInputs = TASK_KINDS.map((kind) => [kind, components.add(route('post', `/api/tasks/${kind}`).body!.schema, 'input')] as const);
  for (const [kind, id] of createInputs) {
    if (!id.startsWith(COMPONENT_PREFIX.input)) throw new Error(`the create body of ${kind} has no component id`);
  }
  const taskId = components.add(route('get', '/api/tasks/{publicId}').responses[200]!.schema!, 'output');
  const cancelId = components.add(route('post', '/api/tasks/{publicId}/cancel').responses[200]!.schema!, 'output');
  const listId = components.add(route('get', '/api/tasks').responses[200]!.schema!, 'output');
  const batchIds = TASK_KINDS.map((kind) => components.add(route('post', `/api/tasks/${kind}/batch`).responses[201]!.schema!, 'output'));
  if (new Set(batchIds).size !== 1) throw new Error('the batch routes answer different shapes');
  components.add(route('get', '/api/tasks').query!, 'input', 'ListTasksQuery');
  components.add(route('post', '/api/tasks/cancel').body!.schema, 'input');
  components.add(route('post', '/api/tasks/cancel').responses[200]!.schema!, 'output');
  components.add(route('post', '/api/tasks/{publicId}/read-token').responses[201]!.schema!, 'output');
  for (const schema of [
    errorSchema,
    validationErrorSchema,
    rateLimitedSchema,
    insufficientCreditsSchema,
    spendLimitReachedSchema,
    batchExceedsRateLimitSchema,
    expiredTrialKeySchema,
    webhookEventSchema,
  ]) {
    components.add(schema, 'output');
  }
  if (cancelId !== taskId) throw new Error('cancel answers a different shape than get');

  // Code-unit order, not localeCompare: the output must not depend on the machine's locale.
  const declarations = [...components.defs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, def]) => declaration(id, def));
  return [
    '// Generated by scripts/generate-client.ts from the API route registry (services/api/src/routes).',
    '// Do not edit: change the route schemas and run `npm run generate:client`.',
    '',
    '/** The API version these types describe; the client sends it as `TaskApi-Version` on every request. */',
    `export const API_VERSION = ${JSON.stringify(NEWEST_VERSION)};`,
    '',
    '/** Every task kind, in the order of the API. */',
    `export const TASK_KINDS = [${TASK_KINDS.map((k) => JSON.stringify(k)).join(', ')}] as const;`,
    '',
    '/** The request body of `POST /api/tasks/{kind}` for each kind (what the caller sends; defaults not yet applied). */',
    'export interface CreateTaskInputs {',
    ...createInputs.map(([kind, id]) => `  ${JSON.stringify(kind)}: ${typeName(id)};`),
    '}',
    '',
    `/** \`GET /api/tasks/{publicId}\`, \`POST /api/tasks/{kind}\` and cancel answer this. */`,
    `export type TaskResponse = ${typeName(taskId)};`,
    `/** \`GET /api/tasks\` answers this. */`,
    `export type TaskListResponse = ${typeName(listId)};`,
    `/** \`POST /api/tasks/{kind}/batch\` answers this. */`,
    `export type TaskBatchResponse = ${typeName(batchIds[0]!)};`,
    '',
    ...declarations,
  ].join('\n');
}

if (require.main === module) {
  const text = generateClientTypes();
  const current = fs.existsSync(GENERATED_FILE) ? fs.readFileSync(GENERATED_FILE, 'utf8') : '';
  if (current === text) {
    console.log(`${path.relative(process.cwd(), GENERATED_FILE)} is up to date`);
  } else {
    fs.writeFileSync(GENERATED_FILE, text);
    console.log(`wrote ${path.relative(process.cwd(), GENERATED_FILE)}`);
  }
}
