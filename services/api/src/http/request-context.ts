import type { Response } from 'express';

/** What the API-key middleware learned about the caller. */
export interface KeyPrincipal {
  keyId: string;
  accountId: string;
  type: 'paid' | 'trial';
  grantId: string | null;
  keyPrefix: string;
}

/** What the session middleware learned about the caller. */
export interface SessionPrincipal {
  accountId: string;
  email: string;
  tokenId: string;
  expiresAt: number;
  /** True when the session came from the cookie (state changes need a same-origin check). */
  viaCookie: boolean;
}

/** Per-request values, kept in `res.locals` with these names. */
export interface RequestLocals {
  requestId: string;
  startedAt: bigint;
  key?: KeyPrincipal;
  session?: SessionPrincipal;
  publicId?: string;
  /** Status marker of the task this GET is about, read with the rate limit (null: none). */
  taskStatusMarker?: number | null;
  /** The raw JSON body text (task creation only), for echoing `payload` unchanged. */
  rawBody?: string;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

export function keyPrincipal(res: Response): KeyPrincipal {
  const key = locals(res).key;
  if (!key) throw new Error('API-key middleware did not run for this route');
  return key;
}

export function sessionPrincipal(res: Response): SessionPrincipal {
  const session = locals(res).session;
  if (!session) throw new Error('Session middleware did not run for this route');
  return session;
}
