import net from 'node:net';
import tls, { type ConnectionOptions } from 'node:tls';
import type * as Undici from 'undici';
import { classifyAddress } from './address-policy';
import { BLOCKED, blockedMessage, checkedLookup, systemResolver, type HostResolver } from './checked-lookup';

/** Why an outbound request failed; stable strings, safe to show to customers. */
export type EgressErrorCode =
  | 'invalid_url'
  | 'blocked_destination'
  | 'dns_failure'
  | 'connect_failure'
  | 'tls_failure'
  | 'timeout'
  | 'aborted'
  | 'protocol_error';

export class EgressError extends Error {
  override name = 'EgressError';
  constructor(
    readonly code: EgressErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface EgressOptions {
  /** Allow loopback, private, link-local and other non-public destinations (tests, local development). */
  allowPrivateNetworks: boolean;
  /**
   * Extra TLS client options, e.g. `{ca}` for a test CA. Production leaves this unset: Node's
   * trust store plus `NODE_EXTRA_CA_CERTS`. Verification is never turned off.
   */
  tls?: Pick<ConnectionOptions, 'ca'>;
  /**
   * Resolves host names; default: the system resolver. Tests answer with fixed addresses. Every
   * address in the answer is checked and the socket connects to one of exactly those addresses.
   */
  resolve?: HostResolver;
}

export interface EgressRequest {
  method: 'GET' | 'POST';
  /** An `https://` URL supplied by a customer. */
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole-request deadline: connect, headers and body. */
  timeoutMs: number;
  /** Read at most this many body bytes; the rest is discarded and `truncated` set. */
  maxResponseBytes: number;
  signal?: AbortSignal;
}

export interface EgressResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  truncated: boolean;
}

export interface EgressClient {
  request(req: EgressRequest): Promise<EgressResponse>;
  close(): Promise<void>;
}

/** Open connections to one origin (callback host or image host) at a time, per process. */
export const MAX_CONNECTIONS_PER_HOST = 32;

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/;

interface ErrorLike {
  message: string;
  code?: string;
  cause?: unknown;
  errors?: unknown[];
}

// Duck-typed: errors raised inside Node's internals can come from another realm (vm contexts,
// test runners), where `instanceof Error` is false.
const isErrorLike = (v: unknown): v is ErrorLike =>
  typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string';

function errorChain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let cur: unknown = err;
  while (isErrorLike(cur) && out.length < 8) {
    out.push(cur);
    cur = cur.cause ?? cur.errors?.[0];
  }
  return out;
}

/** Maps undici/socket/TLS errors to a stable code and a message without internals. */
function classify(err: unknown, url: URL, timedOut: boolean, aborted: boolean): EgressError {
  if (err instanceof EgressError) return err;
  const chain = errorChain(err);
  const codes = chain.map((e) => e.code ?? '');
  const blocked = chain.find((e) => e.code === BLOCKED);
  if (blocked) return new EgressError('blocked_destination', blocked.message);
  if (timedOut || codes.some((c) => c === 'UND_ERR_CONNECT_TIMEOUT' || c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT')) {
    return new EgressError('timeout', 'timed out');
  }
  if (aborted) return new EgressError('aborted', 'aborted');
  const tls = chain.find((e) => e.code !== undefined && TLS_CODES.test(e.code));
  if (tls) return new EgressError('tls_failure', `TLS error: ${tls.message} (${tls.code})`);
  const dnsErr = chain.find((e) => e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN');
  if (dnsErr) return new EgressError('dns_failure', `could not resolve ${url.hostname} (${dnsErr.code})`);
  const sock = chain.find((e) => e.code !== undefined && /^E[A-Z]+$/.test(e.code));
  if (sock) return new EgressError('connect_failure', `connection failed (${sock.code})`);
  const last = chain[chain.length - 1];
  return new EgressError('protocol_error', `request failed: ${last?.message ?? String(err)}`);
}

/** The IP address a parsed URL's host is, or null when the host is a name to resolve. */
export function hostAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return net.isIP(host) ? host : null;
}

/**
 * HTTP client for customer-supplied URLs (webhook callbacks, `image_url`): https only, no redirects,
 * non-public destinations refused (checked on the address actually connected to), TLS verified,
 * a deadline on the whole exchange and a cap on the response body read.
 */
export function createEgressClient(opts: EgressOptions): EgressClient {
  // One trust store for every connection: built per connection (the default), it was a large
  // share of each new connection's CPU. Same roots: Node's store, NODE_EXTRA_CA_CERTS, or `ca`.
  const secureContext = tls.createSecureContext({ ...opts.tls });
  // undici and the agent come with the first request (the API sends one only when the console
  // sends a test webhook): undici's modules are about 3 MB of heap. A require, so the bundle
  // keeps it lazy.
  let undici: { agent: Undici.Agent; request: typeof Undici.request } | undefined;
  const connect = () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Agent, request } = require('undici') as typeof Undici;
    const agent = new Agent({
      connect: { lookup: checkedLookup(opts.resolve ?? systemResolver, opts.allowPrivateNetworks), secureContext },
      // Connections are kept and reused per origin (scheme, host, port), at most this many each;
      // more requests to one host wait for a free connection, within their own deadline.
      connections: MAX_CONNECTIONS_PER_HOST,
      keepAliveTimeout: 4_000,
    });
    return { agent, request };
  };

  return {
    async request(req) {
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        throw new EgressError('invalid_url', 'invalid URL');
      }
      if (url.protocol !== 'https:') throw new EgressError('invalid_url', 'only https:// URLs are allowed');
      // IP literals never go through the lookup hook, so they are checked here. The URL parser
      // has already turned every numeric spelling (2130706433, 0177.0.0.1, 0x7f.1, 127.1) into
      // dotted decimal and compressed IPv6; zone ids are not valid in URLs.
      const literal = hostAddress(url);
      if (literal !== null && !opts.allowPrivateNetworks && !classifyAddress(literal).allowed) {
        throw new EgressError('blocked_destination', blockedMessage(literal));
      }

      const timeout = AbortSignal.timeout(req.timeoutMs);
      const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
      const { agent, request } = (undici ??= connect());
      try {
        const res = await request(url, {
          dispatcher: agent,
          method: req.method,
          headers: req.headers,
          body: req.body,
          signal,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.timeoutMs,
        });
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        for await (const chunk of res.body) {
          const buf = chunk as Buffer;
          if (size + buf.length > req.maxResponseBytes) {
            chunks.push(buf.subarray(0, req.maxResponseBytes - size));
            truncated = true;
            res.body.destroy();
            break;
          }
          chunks.push(buf);
          size += buf.length;
        }
        return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), truncated };
      } catch (err) {
        throw classify(err, url, timeout.aborted, req.signal?.aborted ?? false);
      }
    },
    close: async () => {
      await undici?.agent.close();
    },
  };
}
