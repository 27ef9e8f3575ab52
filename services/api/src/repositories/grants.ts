// Trial grants (`trial_grants`): Prisma's typed client for the console and the operator, every
// statement about a grant. Task creation draws on a grant's quota inside `create_tasks` and a
// refund returns it inside the terminal transition's statement (@taskapi/task-lifecycle, stores/task-rows.ts); a key's reads join its grant's expiry (keys.ts).
import type { PrismaClient, Prisma } from '@taskapi/db';
import { LedgerRepository } from './ledger';

const grantSelect = {
  id: true,
  quotaTotal: true,
  quotaRemaining: true,
  expiresAt: true,
  createdAt: true,
  /** At most one: the partial unique index allows one unrevoked key per grant. */
  apiKeys: { where: { revokedAt: null }, select: { id: true, keyPrefix: true } },
} satisfies Prisma.TrialGrantSelect;

/** A trial grant as a key binding to it sees it. */
export type BindableGrant = Prisma.TrialGrantGetPayload<{ select: { expiresAt: true; quotaRemaining: true } }>;

/** A grant with its unrevoked key, if any. */
export type GrantWithActiveKey = Prisma.TrialGrantGetPayload<{ select: typeof grantSelect }>;

export interface NewGrant {
  id: string;
  accountId: string;
  quota: number;
  expiresAt: Date;
}

export class GrantRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Inserts the grant with its full quota and its trial-grant ledger row, in one transaction. */
  async create(grant: NewGrant): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await tx.trialGrant.create({
        data: { id: grant.id, accountId: grant.accountId, quotaTotal: grant.quota, quotaRemaining: grant.quota, expiresAt: grant.expiresAt },
        select: { id: true },
      });
      await new LedgerRepository(tx).record({ accountId: grant.accountId, grantId: grant.id, entryType: 'trial_grant', amount: grant.quota });
    });
  }

  /** The account's grant a key would bind to, or null. */
  forBinding(accountId: string, grantId: string): Promise<BindableGrant | null> {
    return this.prisma.trialGrant.findFirst({ where: { id: grantId, accountId }, select: { expiresAt: true, quotaRemaining: true } });
  }

  /** The account's grants, newest first, each with its unrevoked key. */
  listWithActiveKey(accountId: string): Promise<GrantWithActiveKey[]> {
    return this.prisma.trialGrant.findMany({ where: { accountId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: grantSelect });
  }
}
