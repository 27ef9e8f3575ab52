/** Who is calling, as the authentication middleware established it. */

/** A request authenticated by `X-Api-Key`. */
export interface KeyPrincipal {
  keyId: string;
  accountId: string;
  type: 'paid' | 'trial';
  grantId: string | null;
  keyPrefix: string;
  /** The account's pinned API version (docs/api.md, "Versions"). */
  apiVersion: string;
}

/** A request authenticated by a console login session. */
export interface SessionPrincipal {
  accountId: string;
  email: string;
  tokenId: string;
  expiresAt: number;
  /** The account's pinned API version (docs/api.md, "Versions"). */
  apiVersion: string;
  /** True when the session came from the cookie (state changes need a same-origin check). */
  viaCookie: boolean;
}
