#!/usr/bin/env node
// `npm start`: everything on one machine with the default configuration.
//   1. installs dependencies when they are missing (npm ci), generates the Prisma client and builds;
//   2. creates the database if needed and applies migrations;
//   3. seeds a demo account on an empty database and prints its login and a paid API key;
//   4. runs the api, the worker and the webhook dispatcher as plain `node` processes (the same
//      built files the image runs), stopping all three together.
// Ctrl-C or SIGTERM takes every service through its own graceful stop; a service that has not
// stopped in time is killed, so nothing is left behind.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Longer than any service's own stop deadline (the API's drain period included). */
const STOP_DEADLINE_MS = 40_000;

const children = new Map();
let stopping = false;

/**
 * Stops everything this process started: one SIGTERM each (the setup step running, or the three
 * services), then SIGKILL for whatever is still there after the deadline.
 */
function stopAll() {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill('SIGTERM');
  setTimeout(() => {
    for (const [name, child] of children) {
      console.error(`${name} did not stop in ${STOP_DEADLINE_MS / 1000} s; killing it`);
      child.kill('SIGKILL');
    }
    process.exitCode = 1;
  }, STOP_DEADLINE_MS).unref();
  if (children.size === 0) process.exit(process.exitCode ?? 0);
}
// From the start, so a signal during setup (npm ci, the build, migrations) stops that step too.
// Ctrl-C reaches every process of the terminal's group, the services included; SIGTERM reaches
// only this one: either way each child gets one SIGTERM and stops gracefully.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, stopAll);

/** Runs one setup step to completion (exits on failure, or when stopped meanwhile). */
async function step(title, command, args) {
  console.log(`\n> ${title}`);
  const child = spawn(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  children.set(title, child);
  const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  children.delete(title);
  if (stopping) process.exit(process.exitCode ?? 1);
  if (code !== 0) {
    console.error(`\n${title} failed (exit ${code ?? signal}).`);
    if (title.startsWith('Applying')) {
      console.error('Is PostgreSQL running and reachable at DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/taskapi)?');
    }
    process.exit(code ?? 1);
  }
}

const node = (file) => [process.execPath, ['--enable-source-maps', path.join(root, 'dist', file)]];

if (!fs.existsSync(path.join(root, 'node_modules/.package-lock.json')) || !fs.existsSync(path.join(root, 'node_modules/esbuild'))) {
  await step('Installing dependencies (npm ci)', process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ci']);
}
await step('Generating the Prisma client', process.execPath, [path.join(root, 'scripts/prisma-generate.mjs')]);
await step('Building', process.execPath, [path.join(root, 'scripts/build.mjs')]);
await step('Applying database migrations', ...node('migrate.js'));
await step('Seeding demo data (empty database only)', ...node('seed-demo.js'));

const services = ['api', 'worker', 'webhook-dispatcher'];
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
      stopAll();
    } else if (code !== 0) {
      process.exitCode = code ?? 1;
    }
    if (children.size === 0) process.exit(process.exitCode ?? 0);
  });
}
