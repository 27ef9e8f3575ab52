// The customers of a chaos run: a few paid accounts and one trial grant, made with the operator
// CLI's domain functions before the services start. Balances are large enough that no creation is
// ever refused for credits, so every refusal the clients see comes from the chaos.
import type { Config } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { createAccount, grantTrial } from '../services/api/src/domain/accounts';
import { createKey } from '../services/api/src/domain/api-keys';
import { getWebhookSecret } from '../services/api/src/domain/webhook-secret';
import { createRepositories } from '../services/api/src/repositories';

export interface Payer {
  accountId: string;
  email: string;
  apiKey: string;
  type: 'paid' | 'trial';
  grantId: string | null;
  /** Opening paid balance, or the grant's quota. */
  opening: number;
  webhookSecret: string;
}

const PAID_ACCOUNTS = 3;
const OPENING_CREDITS = 1_000_000;
const TRIAL_QUOTA = 200_000;

export async function createPayers(config: Config, databaseUrl: string): Promise<Payer[]> {
  const db = createDatabase({ url: databaseUrl, poolSize: 2 });
  const repos = createRepositories(db);
  const deps = { keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey };
  const payers: Payer[] = [];
  try {
    for (let i = 0; i <= PAID_ACCOUNTS; i++) {
      const trial = i === PAID_ACCOUNTS;
      const email = `chaos-${i}@example.test`;
      const account = await createAccount(repos, config.secretsKey, { email, password: 'chaos password', credits: trial ? 0 : OPENING_CREDITS });
      let grantId: string | null = null;
      let apiKey: string;
      if (trial) {
        grantId = (await grantTrial(repos, email, TRIAL_QUOTA, new Date(Date.now() + 86_400_000))).grant_id;
        apiKey = (await createKey(deps, account.account_id, { type: 'trial', grant_id: grantId })).plaintext_key;
      } else {
        apiKey = (await createKey(deps, account.account_id, { type: 'paid' })).plaintext_key;
      }
      const { webhook_secret: webhookSecret } = await getWebhookSecret(repos.accounts, config.secretsKey, account.account_id);
      payers.push({ accountId: account.account_id, email, apiKey, type: trial ? 'trial' : 'paid', grantId, opening: trial ? TRIAL_QUOTA : OPENING_CREDITS, webhookSecret });
    }
  } finally {
    await db.close();
  }
  return payers;
}
