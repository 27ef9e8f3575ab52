// Accounts (`accounts`): Prisma's typed client. Console and operator traffic only: login, the
// session's account, balance, webhook secret, and the operator's account and credit commands.
import { isUniqueViolation, type PrismaClient, type Prisma } from '@taskapi/db';
import { LedgerRepository } from './ledger';

/** The columns a new account is created with; the balance is set from its opening credits. */
export type NewAccount = Pick<Prisma.AccountUncheckedCreateInput, 'id' | 'email' | 'passwordHash' | 'webhookSecretCiphertext'> & {
  /** The API version the account is pinned to: the newest at its creation. */
  apiVersion: string;
};

const loginSelect = { id: true, email: true, passwordHash: true, apiVersion: true } satisfies Prisma.AccountSelect;

/** What a login checks. */
export type AccountLogin = Prisma.AccountGetPayload<{ select: typeof loginSelect }>;

const webhookSecretSelect = { webhookSecretCiphertext: true, webhookSecretRotatedAt: true } satisfies Prisma.AccountSelect;

/** The account's encrypted webhook signing secret. */
export type AccountWebhookSecret = Prisma.AccountGetPayload<{ select: typeof webhookSecretSelect }>;

export class AccountRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Inserts the account with `openingCredits` as its paid balance (and, when positive, their
   * top-up ledger row, in the same transaction). False when the e-mail is taken.
   */
  async create(account: NewAccount, openingCredits: number): Promise<boolean> {
    try {
      await this.prisma.$transaction(async (tx) => {
        await tx.account.create({ data: { ...account, paidBalance: openingCredits }, select: { id: true } });
        if (openingCredits > 0) await new LedgerRepository(tx).record({ accountId: account.id, entryType: 'topup', amount: openingCredits });
      });
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** How many accounts exist. */
  count(): Promise<number> {
    return this.prisma.account.count();
  }

  /** The id of the account with this (normalized) e-mail, or null. */
  async idByEmail(email: string): Promise<string | null> {
    return (await this.prisma.account.findUnique({ where: { email }, select: { id: true } }))?.id ?? null;
  }

  /** The account with this (normalized) e-mail, with its password hash, or null. */
  findForLogin(email: string): Promise<AccountLogin | null> {
    return this.prisma.account.findUnique({ where: { email }, select: loginSelect });
  }

  /** What a console session needs of its account (e-mail, pinned API version), or null when the account does not exist. */
  sessionAccount(accountId: string): Promise<{ email: string; apiVersion: string } | null> {
    return this.prisma.account.findUnique({ where: { id: accountId }, select: { email: true, apiVersion: true } });
  }

  /** The account's paid balance (credits). Throws when the account does not exist. */
  /** The e-mail of each of these accounts (unknown ones left out). */
  async emailsOf(accountIds: readonly string[]): Promise<Map<string, string>> {
    if (accountIds.length === 0) return new Map();
    const rows = await this.prisma.account.findMany({ where: { id: { in: [...accountIds] } }, select: { id: true, email: true } });
    return new Map(rows.map((r) => [r.id, r.email]));
  }

  async paidBalance(accountId: string): Promise<number> {
    return (await this.prisma.account.findUniqueOrThrow({ where: { id: accountId }, select: { paidBalance: true } })).paidBalance;
  }

  /** The account's own cap of running tasks, or null when it takes the default. Throws when the account does not exist. */
  async maxRunning(accountId: string): Promise<number | null> {
    return (await this.prisma.account.findUniqueOrThrow({ where: { id: accountId }, select: { maxRunning: true } })).maxRunning;
  }

  /** Sets (or, with null, clears) the account's own cap of running tasks. */
  async setMaxRunning(accountId: string, maxRunning: number | null): Promise<void> {
    await this.prisma.account.update({ where: { id: accountId }, data: { maxRunning }, select: { id: true } });
  }

  /** Adds paid credits with their top-up ledger row, in one transaction; returns the new balance. */
  addCredits(accountId: string, amount: number): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const account = await tx.account.update({ where: { id: accountId }, data: { paidBalance: { increment: amount } }, select: { paidBalance: true } });
      await new LedgerRepository(tx).record({ accountId, entryType: 'topup', amount });
      return account.paidBalance;
    });
  }

  /** The encrypted webhook secret. Throws when the account does not exist. */
  webhookSecret(accountId: string): Promise<AccountWebhookSecret> {
    return this.prisma.account.findUniqueOrThrow({ where: { id: accountId }, select: webhookSecretSelect });
  }

  /** Replaces the encrypted webhook secret, rotated now; returns the rotation time. */
  async replaceWebhookSecret(accountId: string, ciphertext: string): Promise<Date> {
    const account = await this.prisma.account.update({
      where: { id: accountId },
      data: { webhookSecretCiphertext: ciphertext, webhookSecretRotatedAt: new Date() },
      select: { webhookSecretRotatedAt: true },
    });
    return account.webhookSecretRotatedAt;
  }
}
