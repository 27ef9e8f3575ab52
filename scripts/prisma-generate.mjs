#!/usr/bin/env node
// Generates the Prisma client (and the DMMF snapshot the migration test reads) when schema.prisma
// changed since the last generation. Works offline: `prisma generate` never runs the schema engine,
// but the CLI insists that one exists, so we point it at any existing file (see DEVELOPERS notes).
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const schema = path.join(root, 'prisma/schema.prisma');
const generatedDir = path.join(root, 'packages/db/src/generated');
const stamp = path.join(generatedDir, '.schema-hash');

const hash = createHash('sha256')
  .update(fs.readFileSync(schema))
  .update(fs.readFileSync(path.join(root, 'prisma/generators/dmmf-snapshot.cjs')))
  .digest('hex');
if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === hash && fs.existsSync(path.join(generatedDir, 'prisma/client.ts'))) {
  process.exit(0);
}

const prismaCli = path.join(root, 'node_modules/prisma/build/index.js');
if (!fs.existsSync(prismaCli)) {
  console.error('prisma CLI not installed; run `npm ci` first');
  process.exit(1);
}
const result = spawnSync(process.execPath, [prismaCli, 'generate'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || process.execPath,
    CHECKPOINT_DISABLE: '1',
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
  },
});
if (result.status !== 0) process.exit(result.status ?? 1);
fs.writeFileSync(stamp, hash);
