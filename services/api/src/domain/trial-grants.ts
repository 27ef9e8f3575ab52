import type { GrantRepository } from '../repositories/grants';

export interface GrantView {
  id: string;
  quota_total: number;
  quota_remaining: number;
  expires_at: string;
  created_at: string;
  /** Unexpired with quota left: it can pay for tasks and bind a key. */
  usable: boolean;
  /** The active key bound to this grant, if any. */
  bound_key_id: string | null;
  bound_key_prefix: string | null;
}

/** The account's trial grants, newest first, with their bound active key. */
export async function listGrants(grants: GrantRepository, accountId: string): Promise<GrantView[]> {
  const now = Date.now();
  const rows = await grants.listWithActiveKey(accountId);
  return rows.map((g) => {
    const bound = g.apiKeys[0];
    const unexpired = g.expiresAt.getTime() > now;
    return {
      id: g.id,
      quota_total: g.quotaTotal,
      quota_remaining: g.quotaRemaining,
      expires_at: g.expiresAt.toISOString(),
      created_at: g.createdAt.toISOString(),
      usable: unexpired && g.quotaRemaining > 0,
      // A key bound to an expired grant no longer works; it is not "bound" for the console's purposes.
      bound_key_id: unexpired && bound ? bound.id : null,
      bound_key_prefix: unexpired && bound ? bound.keyPrefix : null,
    };
  });
}
