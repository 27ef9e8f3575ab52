#!/usr/bin/env node
// `npm start`: everything on one machine with the default configuration.
//   1. installs dependencies when they are missing (npm ci), generates the Prisma client and builds;
//   2. creates the database if needed and applies migrations;
//   3. seeds a demo account on an empty database and prints its login and a paid API key;
//   4. runs the api, the worker and the webhook dispatcher as plain `node` processes (the same
//      built files the image runs), stopping all three together.
// Ctrl-C or SIGTERM takes every service through its own graceful stop; a service that has not
// stopped in time is killed, so nothing is left behind.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Longer than any service's own stop deadline (the API's drain period included). */
const STOP_DEADLINE_MS = 40_000;

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

const node = (file) => [process.execPath, ['--enable-source-maps', path.join(root, 'dist', file)]];

if (!fs.existsSync(path.join(root, 'node_modules/.package-lock.json')) || !fs.existsSync(path.join(root, 'node_modules/esbuild'))) {
  step('Installing dependencies (npm ci)', process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ci']);
}
step('Generating the Prisma client', process.execPath, [path.join(root, 'scripts/prisma-generate.mjs')]);
step('Building', process.execPath, [path.join(root, 'scripts/build.mjs')]);
step('Applying database migrations', ...node('migrate.js'));
step('Seeding demo data (empty database only)', ...node('seed-demo.js'));

const services = ['api', 'worker', 'webhook-dispatcher'];
const children = new Map();
let stopping = false;

function stopAll(signal) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
  setTimeout(() => {
    for (const [name, child] of children) {
      console.error(`${name} did not stop in ${STOP_DEADLINE_MS / 1000} s; killing it`);
      child.kill('SIGKILL');
    }
    process.exitCode = 1;
  }, STOP_DEADLINE_MS).unref();
}

console.log('\n> Starting api, worker and webhook-dispatcher (Ctrl+C stops all three)\n');
for (const name of services) {
  const [command, args] = node(`${name}.js`);
  const child = spawn(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`${name} exited (${signal ?? code}); stopping the others`);
      process.exitCode = code || 1;
      stopAll('SIGTERM');
    } else if (code !== 0) {
      process.exitCode = code ?? 1;
    }
    if (children.size === 0) process.exit(process.exitCode ?? 0);
  });
}
// Ctrl-C reaches every process of the terminal's group, the services included; SIGTERM reaches
// only this one: either way each service gets one SIGTERM and stops gracefully.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stopAll('SIGTERM'));
