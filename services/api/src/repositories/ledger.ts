// The credit ledger (`credit_ledger`): Prisma's typed client. Every credit movement is a row, and a
// balance only changes in the same transaction as its row: top-ups and trial grants are written
// here, inside the transactions of accounts.ts and grants.ts; charges and refunds by the task SQL
// functions (`create_tasks`, and the terminal transition's statement in @taskapi/task-lifecycle).
import type { Prisma } from '@taskapi/db';

/** A console-side ledger row: a top-up of the paid balance or a trial grant's quota. */
export type NewLedgerEntry = Pick<Prisma.CreditLedgerEntryUncheckedCreateInput, 'accountId' | 'grantId' | 'entryType' | 'amount'>;

export class LedgerRepository {
  /** @param tx the transaction that also moves the balance */
  constructor(private readonly tx: Prisma.TransactionClient) {}

  async record(entry: NewLedgerEntry): Promise<void> {
    await this.tx.creditLedgerEntry.create({ data: entry, select: { id: true } });
  }
}
