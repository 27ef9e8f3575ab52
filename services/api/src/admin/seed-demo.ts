// Used by `npm start`: on an empty database, creates a demo account with credits, a trial grant and
// a paid API key, and prints how to use them. Does nothing when any account exists.
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { randomBase62 } from '@taskapi/crypto';
import { createAccount, grantTrial } from '../domain/accounts';
import { createKey } from '../domain/api-keys';
import { createRepositories } from '../repositories';

const DEMO_EMAIL = 'demo@example.com';

async function main(): Promise<void> {
  const config = loadConfig();
  const db = createDatabase({ url: config.databaseUrl, poolSize: 2, applicationName: 'taskapi-seed' });
  const repos = createRepositories(db);
  try {
    if ((await repos.accounts.count()) > 0) {
      console.log('The database already has accounts; no demo data was added. Create more with `npm run admin -- create-account ...`.');
      return;
    }
    const password = randomBase62(16);
    const account = await createAccount(repos, config.secretsKey, { email: DEMO_EMAIL, password, credits: 1_000 });
    await grantTrial(repos, DEMO_EMAIL, 100, new Date(Date.now() + 14 * 86_400_000));
    const { plaintext_key } = await createKey(
      { keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey },
      account.account_id,
      { type: 'paid' },
    );
    const base = config.publicBaseUrl;
    console.log(
      [
        '',
        '  Demo account created (shown once; store it now):',
        `    API docs:  ${base}/docs`,
        `    console:   ${base}/app  (log in with the e-mail and password below)`,
        `    e-mail:    ${DEMO_EMAIL}`,
        `    password:  ${password}`,
        `    paid key:  ${plaintext_key}   (1000 credits; the account also has a 100-credit trial grant)`,
        ...(config.admin?.generatedIn ? [`    queues:    ${base}/admin/queues  (Bull Board; its login is in ${config.admin.generatedIn})`] : []),
        '',
        '  Try it:',
        `    curl -s -X POST ${base}/api/tasks/image-generation \\`,
        `      -H 'X-Api-Key: ${plaintext_key}' -H 'Content-Type: application/json' \\`,
        `      -d '{"prompt":"a lighthouse at dusk"}'`,
        '',
      ].join('\n'),
    );
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(`seeding failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
