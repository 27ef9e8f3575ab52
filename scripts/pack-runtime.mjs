#!/usr/bin/env node
// `node scripts/pack-runtime.mjs <dir> [--install]`: lays out the production tree the image runs,
// from a built checkout (`npm run build` first): the manifests (root and workspaces) with the
// lockfile, dist/, and prisma/ (schema and migrations, for `npm run migrate`). With --install it
// then installs production dependencies only (`npm ci --omit=dev --omit=peer --ignore-scripts`)
// and prunes what the lockfile brings along but nothing runs, as the image's runtime stage does. Sources, tests, dev dependencies and the TypeScript tooling stay out.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Paths (relative to the root) of every package.json npm needs to install the workspaces. */
export function manifests() {
  const found = ['package.json', 'package-lock.json'];
  for (const group of ['packages', 'services']) {
    for (const name of fs.readdirSync(path.join(root, group)).sort()) {
      if (fs.existsSync(path.join(root, group, name, 'package.json'))) found.push(path.join(group, name, 'package.json'));
    }
  }
  return found;
}

/**
 * Installed with the production dependencies but never run there: the lockfile keeps the Prisma
 * CLI and TypeScript as optional peers of @prisma/client (about 65 MB). The client runs without them.
 */
const NOT_AT_RUNTIME = ['prisma', 'typescript', '.bin/prisma', '.bin/tsc', '.bin/tsserver'];

/** Removes NOT_AT_RUNTIME from `dir`/node_modules (the image's prod-deps stage runs this too). */
export function pruneRuntime(dir) {
  for (const name of NOT_AT_RUNTIME) fs.rmSync(path.join(dir, 'node_modules', name), { recursive: true, force: true });
}

export function packRuntime(target, { install = false } = {}) {
  if (!fs.existsSync(path.join(root, 'dist/api.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  fs.mkdirSync(target, { recursive: true });
  for (const file of manifests()) fs.cpSync(path.join(root, file), path.join(target, file));
  fs.cpSync(path.join(root, 'dist'), path.join(target, 'dist'), { recursive: true });
  fs.cpSync(path.join(root, 'prisma/schema.prisma'), path.join(target, 'prisma/schema.prisma'));
  fs.cpSync(path.join(root, 'prisma/migrations'), path.join(target, 'prisma/migrations'), { recursive: true });
  if (install) {
    const npm = spawnSync('npm', ['ci', '--omit=dev', '--omit=peer', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: target,
      encoding: 'utf8',
    });
    if (npm.status !== 0) throw new Error(`npm ci --omit=dev failed (${npm.status}):\n${npm.stdout}${npm.stderr}`);
    pruneRuntime(target);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const target = args.find((a) => !a.startsWith('--'));
  if (!target) {
    console.error('usage: node scripts/pack-runtime.mjs <dir> [--install] | --prune <dir>');
    process.exit(2);
  }
  try {
    if (args.includes('--prune')) {
      pruneRuntime(path.resolve(target));
      process.exit(0);
    }
    packRuntime(path.resolve(target), { install: args.includes('--install') });
    console.log(`runtime tree in ${path.resolve(target)}`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
