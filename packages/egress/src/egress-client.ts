import dns from 'node:dns';
import net from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { Agent, request } from 'undici';
import { isPublicAddress } from './address-policy';

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

const BLOCKED = 'ERR_EGRESS_BLOCKED';

class BlockedAddressError extends Error {
  readonly code = BLOCKED;
}

function blockedMessage(host: string): string {
  return `destination not allowed: ${host} resolves to a private, loopback, link-local or reserved address`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * dns.lookup that refuses hosts with any non-public address. The socket then connects to the
 * addresses checked here, so a second resolution (DNS rebinding) cannot swap in another target.
 */
function checkedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { family: options.family ?? 0, hints: options.hints, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (!allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
        return callback(new BlockedAddressError(blockedMessage(hostname)), []);
      }
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

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

/**
 * HTTP client for customer-supplied URLs (webhook callbacks, `image_url`): https only, no redirects,
 * non-public destinations refused (checked on the address actually connected to), TLS verified,
 * a deadline on the whole exchange and a cap on the response body read.
 */
export function createEgressClient(opts: EgressOptions): EgressClient {
  const agent = new Agent({
    connect: { lookup: checkedLookup(opts.allowPrivateNetworks), ...opts.tls },
    keepAliveTimeout: 4_000,
  });

  return {
    async request(req) {
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        throw new EgressError('invalid_url', 'invalid URL');
      }
      if (url.protocol !== 'https:') throw new EgressError('invalid_url', 'only https:// URLs are allowed');
      // IP literals never go through the lookup hook, so they are checked here.
      const literal = url.hostname.replace(/^\[(.*)\]$/, '$1');
      if (net.isIP(literal) && !opts.allowPrivateNetworks && !isPublicAddress(literal)) {
        throw new EgressError('blocked_destination', blockedMessage(literal));
      }

      const timeout = AbortSignal.timeout(req.timeoutMs);
      const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
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
    close: () => agent.close(),
  };
}
