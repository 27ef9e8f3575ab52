// Every query of the API lives in this folder, one file per table family, one style per family:
//  - raw SQL on the pg pool (named statements, rows parsed by a zod schema that is also where the
//    row type comes from, see packages/db/src/sql.ts) for the hot families: tasks (with
//    task_inputs), idempotency, keys, deliveries;
//  - Prisma's typed client (row types from `Prisma.*GetPayload`) for the console and operator
//    families: accounts, grants, ledger.
// A statement belongs to the family it is about; a read may join another family's columns (a key
// with its grant's expiry).
// A transaction that spans families is a method of the repository that owns it; the keys family
// also lends its transaction to domain code (`keys.transaction`) so the binding rules run inside it.
import type { Database } from '@taskapi/db';
import { AccountRepository } from './accounts';
import { DeliveryRepository } from './deliveries';
import { GrantRepository } from './grants';
import { IdempotencyRepository } from './idempotency';
import { KeyRepository } from './keys';
import { TaskRepository } from './tasks';

export interface Repositories {
  tasks: TaskRepository;
  idempotency: IdempotencyRepository;
  keys: KeyRepository;
  deliveries: DeliveryRepository;
  accounts: AccountRepository;
  grants: GrantRepository;
  /** Resolves when PostgreSQL answers a trivial query (readiness). */
  ping(): Promise<void>;
}

/** The API's repositories over one database (its pg pool and the Prisma client sharing it). */
export function createRepositories(db: Pick<Database, 'pool' | 'prisma'>): Repositories {
  return {
    tasks: new TaskRepository(db.pool),
    idempotency: new IdempotencyRepository(db.pool),
    keys: new KeyRepository(db.pool),
    deliveries: new DeliveryRepository(db.pool),
    accounts: new AccountRepository(db.prisma),
    grants: new GrantRepository(db.prisma),
    async ping() {
      await db.pool.query('SELECT 1');
    },
  };
}
