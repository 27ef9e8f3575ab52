// Building blocks of the API's zod schemas. Schemas with `.meta({ id })` become OpenAPI
// components (`#/components/schemas/<id>`); `description` and `example` in `.meta()` are copied
// into the document.
import { z } from 'zod';
import { ID_PREFIXES, type IdKind } from '@taskapi/ids';

/** An ISO 8601 UTC timestamp as the API sends it (`2026-11-23T10:00:00.000Z`). */
export const timestamp = (description?: string) => z.iso.datetime().meta(description ? { description } : {});

/** The same, or `null`. */
export const nullableTimestamp = (description: string) => z.iso.datetime().nullable().meta({ description });

/** A prefixed id (`task_…`, `key_…`) of the given kind. */
export const prefixedId = (kind: IdKind, example: string) =>
  z
    .string()
    .regex(new RegExp(`^${ID_PREFIXES[kind]}_[A-Za-z0-9]{22}$`))
    .meta({ example });
