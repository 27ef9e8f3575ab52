#!/usr/bin/env node
// `npm start`: everything on one machine with the default configuration.
//   1. installs dependencies when they are missing (npm ci) and generates the Prisma client;
//   2. creates the database if needed and applies migrations;
//   3. seeds a demo account on an empty database and prints its login and a paid API key;
//   4. runs the api, the worker and the webhook dispatcher, stopping all three together.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsxCli = path.join(root, 'node_modules/tsx/dist/cli.mjs');

function step(title, command, args) {
  console.log(`\n> ${title}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  if (result.status !== 0) {
    console.error(`\n${title} failed (exit ${result.status ?? result.signal}).`);
    if (title.startsWith('Applying')) {
      console.error('Is PostgreSQL running and reachable at DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/taskapi)?');
    }
    process.exit(result.status ?? 1);
  }
}

if (!fs.existsSync(path.join(root, 'node_modules/.package-lock.json')) || !fs.existsSync(tsxCli)) {
  step('Installing dependencies (npm ci)', process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ci']);
}
step('Generating the Prisma client', process.execPath, [path.join(root, 'scripts/prisma-generate.mjs')]);
step('Applying database migrations', process.execPath, [tsxCli, path.join(root, 'scripts/migrate.ts')]);
step('Seeding demo data (empty database only)', process.execPath, [tsxCli, path.join(root, 'services/api/src/admin/seed-demo.ts')]);

const services = [
  ['api', 'services/api/src/main.ts'],
  ['worker', 'services/worker/src/main.ts'],
  ['webhook-dispatcher', 'services/webhook-dispatcher/src/main.ts'],
];
const children = new Map();
let stopping = false;

function stopAll(signal) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
  // Graceful shutdown has 25 s; then we stop waiting.
  setTimeout(() => process.exit(1), 25_000).unref();
}

console.log('\n> Starting api, worker and webhook-dispatcher (Ctrl+C stops all three)\n');
for (const [name, entry] of services) {
  const child = spawn(process.execPath, [tsxCli, path.join(root, entry)], { cwd: root, stdio: 'inherit', env: process.env });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`${name} exited (${signal ?? code}); stopping the others`);
      process.exitCode = code || 1;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit(process.exitCode ?? 0);
  });
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stopAll(signal === 'SIGINT' ? 'SIGTERM' : signal));
