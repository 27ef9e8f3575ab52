import type { z } from 'zod';
import { UNSTORABLE_TEXT } from '@taskapi/domain';
import { ApiError } from '../errors';

export interface FieldError {
  field: string;
  message: string;
}

/** Where a request input came from: its failures answer with the matching code. */
export type InputPlace = 'body' | 'query' | 'header' | 'path';

const BODY = '(body)';

/** `tasks[3].prompt`: members joined by dots, array positions in brackets. */
function fieldName(path: ReadonlyArray<PropertyKey>): string {
  if (!path.length) return BODY;
  let name = '';
  for (const step of path) name += typeof step === 'number' ? `[${step}]` : name ? `.${String(step)}` : String(step);
  return name;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  bigint: 'an integer',
  null: 'null',
};

function quoteAll(values: readonly unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

/**
 * zod's issues in words an integrator can act on, for every schema that does not set its own
 * message: "is required", "must be an integer", "must be at most 100". Schema messages win.
 */
const humanMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
    case 'too_small': {
      const min = String(issue.minimum);
      if (issue.origin === 'string') return issue.minimum === 1 ? 'must not be empty' : `must be at least ${min} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at least ${min} items`;
      return issue.inclusive === false ? `must be greater than ${min}` : `must be at least ${min}`;
    }
    case 'too_big': {
      const max = String(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${max} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} items`;
      return issue.inclusive === false ? `must be less than ${max}` : `must be at most ${max}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${quoteAll(issue.values)}` : `must be one of ${quoteAll(issue.values)}`;
    case 'invalid_format':
      return issue.format === 'regex' ? 'has the wrong format' : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
    case 'invalid_key':
    case 'invalid_element':
    case 'custom':
      return 'is invalid';
    default:
      return undefined;
  }
};

/** zod issues as `{field, message}` pairs: the field's name and a sentence about it. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: fieldName([...issue.path, key]), message: 'is not a known field' });
      continue;
    }
    out.push({ field: fieldName(issue.path), message: issue.message });
  }
  return out;
}

/** The 400 for a list of problems: the first one in `message`, each one in `errors`. */
export function invalidInput(problems: readonly FieldError[], place: InputPlace): ApiError {
  const whole = place === 'body' ? 'Request body' : place === 'query' ? 'Query' : 'Request';
  const named = problems.map((p) => ({ name: p.field === BODY ? whole : p.field, problem: p.message.replace(/\.$/, '') }));
  const errors = named.map(({ name, problem }) => ({ field: name, message: `${name} ${problem}` }));
  const first = named[0] ?? { name: whole, problem: 'is invalid' };
  if (first.name === whole) return new ApiError('INVALID_REQUEST', { params: first, fields: { errors } });
  return new ApiError(place === 'body' ? 'INVALID_FIELD' : 'INVALID_PARAMETER', { params: first, fields: { errors } });
}

/** Parses `value` with `schema` or throws a 400 listing every problem. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, place: InputPlace = 'body'): z.output<S> {
  const result = schema.safeParse(value, { error: humanMessage });
  if (result.success) return result.data;
  throw invalidInput(describeIssues(result.error.issues), place);
}

const UNSTORABLE_PROBLEM = 'must not contain a NUL character or an unpaired UTF-16 surrogate';
const MAX_REPORTED = 20;

/**
 * Every string of a request input that PostgreSQL text could not store (docs/architecture.md, hostile input): a NUL
 * character or an unpaired surrogate, in a value or an object key, at any depth. Iterative, so a
 * deeply nested body cannot overflow the stack. `skip` names top-level members kept verbatim.
 */
export function unstorableStrings(value: unknown, skip: readonly string[] = []): FieldError[] {
  const problems: FieldError[] = [];
  // Paths as parent links, spelled out only for a problem: copying them per level would make a
  // deeply nested body cost quadratic time.
  const stack: Array<[unknown, Step | null]> = [[value, null]];
  const report = (at: Step | null) => problems.push({ field: fieldName(pathOf(at)), message: UNSTORABLE_PROBLEM });
  while (stack.length && problems.length < MAX_REPORTED) {
    const [node, at] = stack.pop()!;
    if (typeof node === 'string') {
      if (UNSTORABLE_TEXT.test(node)) report(at);
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], { parent: at, key: i }]);
    } else if (typeof node === 'object' && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        if (at === null && skip.includes(key)) continue;
        const step = { parent: at, key };
        if (UNSTORABLE_TEXT.test(key)) report(step);
        else stack.push([child, step]);
      }
    }
  }
  return problems;
}

interface Step {
  parent: Step | null;
  key: PropertyKey;
}

function pathOf(step: Step | null): PropertyKey[] {
  const path: PropertyKey[] = [];
  for (let s = step; s; s = s.parent) path.push(s.key);
  return path.reverse();
}
