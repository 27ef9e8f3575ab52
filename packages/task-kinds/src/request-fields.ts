import { z } from 'zod';

/** Largest decoded `image_base64`, and largest image fetched from `image_url` (8 MiB). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const MAX_URL_LENGTH = 2048;

function isHttpsUrl(value: string): boolean {
  if (!value.startsWith('https://')) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.hostname.length > 0;
  } catch {
    return false;
  }
}

export const httpsUrl = z
  .string()
  .max(MAX_URL_LENGTH, { error: `must be at most ${MAX_URL_LENGTH} characters` })
  .refine(isHttpsUrl, { error: 'must be an https:// URL' });

export const prompt = z
  .string()
  .refine((s) => s.trim().length > 0, { error: 'must not be empty' })
  .refine((s) => [...s].length <= 2000, { error: 'must be at most 2000 characters' });

export const intInRange = (min: number, max: number) =>
  z
    .number({ error: `must be an integer from ${min} to ${max}` })
    .int({ error: `must be an integer from ${min} to ${max}` })
    .min(min, { error: `must be an integer from ${min} to ${max}` })
    .max(max, { error: `must be an integer from ${min} to ${max}` });

/** A fairness key: the integrator's own end user, 1-64 characters. */
export const FAIRNESS_KEY = /^[A-Za-z0-9._:@-]{1,64}$/;

/** The fields every creation request may carry. */
export const commonFields = {
  callback_url: httpsUrl.nullish(),
  // Any JSON value; the API stores and echoes its exact source text.
  payload: z.unknown().optional(),
  // Steering (docs/api.md, "Order, lifetime and fairness inside an account"); null is the same as absent.
  priority: intInRange(-86400, 86400).nullish(),
  ttl_seconds: intInRange(1, 604800).nullish(),
  fairness_key: z
    .string({ error: 'must be a string of 1 to 64 characters from A-Z a-z 0-9 . _ : @ -' })
    .regex(FAIRNESS_KEY, { error: 'must be a string of 1 to 64 characters from A-Z a-z 0-9 . _ : @ -' })
    .nullish(),
};

/** The message when the body is not a JSON object. */
export const bodyError = { error: 'must be a JSON object' };
