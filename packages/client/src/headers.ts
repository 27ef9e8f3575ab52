/** Anything with `get(name)`: a fetch `Headers` object (WHATWG, undici, Cloudflare, Deno…). */
export interface HeadersLike {
  get(name: string): string | null;
}

/** A plain object of headers in any letter case, including Node's `IncomingHttpHeaders`. */
export type HeaderRecord = Record<string, string | readonly string[] | number | undefined>;

export type AnyHeaders = HeadersLike | HeaderRecord;

function isHeadersLike(h: AnyHeaders): h is HeadersLike {
  return typeof (h as { get?: unknown }).get === 'function';
}

/** A reader of one header by name, case-insensitively; repeated values are joined with ", " as fetch does. */
export function headerReader(headers: AnyHeaders): (name: string) => string | undefined {
  if (isHeadersLike(headers)) return (name) => headers.get(name) ?? undefined;
  const byName = new Map<string, string>();
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    const name = key.toLowerCase();
    byName.set(name, byName.has(name) ? `${byName.get(name)}, ${text}` : text);
  }
  return (name) => byName.get(name.toLowerCase());
}
