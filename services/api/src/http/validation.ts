import type { z } from 'zod';
import { ApiError } from '../errors';

export interface FieldError {
  field: string;
  message: string;
}

function fieldName(path: ReadonlyArray<PropertyKey>): string {
  return path.length ? path.map(String).join('.') : '(body)';
}

/** zod issues as `{field, message}` pairs with wording an integrator can act on. */
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

/** Parses `value` with `schema` or throws a 400 listing every problem. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what = 'Request body'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = describeIssues(result.error.issues);
  const first = errors[0];
  const fields = { errors };
  const problem = (first?.message ?? 'is invalid').replace(/\.$/, '');
  if (!first || first.field === '(body)') throw new ApiError('INVALID_REQUEST', { params: { name: what, problem }, fields });
  const code = what === 'Request body' ? 'INVALID_FIELD' : 'INVALID_PARAMETER';
  throw new ApiError(code, { params: { name: first.field, problem }, fields });
}
