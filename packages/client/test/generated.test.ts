// The SDK's types are generated from the API's route registry and committed; this fails when a
// route schema changed without regenerating them, so the server and the SDK cannot drift apart.
import fs from 'node:fs';
import { GENERATED_FILE, generateClientTypes } from '../../../scripts/generate-client';

describe('packages/client/src/generated.ts', () => {
  it('is what `npm run generate:client` writes from the current route registry', () => {
    const committed = fs.readFileSync(GENERATED_FILE, 'utf8');
    const fresh = generateClientTypes();
    if (committed !== fresh) throw new Error('packages/client/src/generated.ts is out of date with the route schemas: run `npm run generate:client` and commit the result.');
    expect(committed).toBe(fresh);
  });
});
