/** A parsed HTTP response for assertions. */
export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  body: T;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Serialized as JSON unless it is already a string or Buffer. */
  body?: unknown;
}

/** fetch() against a running test server, returning status, headers, raw text and parsed JSON. */
export async function request<T = any>(baseUrl: string, method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | undefined;
  if (opts.body !== undefined) {
    if (typeof opts.body === 'string' || Buffer.isBuffer(opts.body)) body = opts.body;
    else body = JSON.stringify(opts.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed as T };
}
