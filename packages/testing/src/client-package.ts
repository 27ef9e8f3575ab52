import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CLIENT_DIR = path.resolve(__dirname, '../../client');

/**
 * The SDK as an integrator gets it: builds `@taskapi/client` (its prepack), packs it with `npm pack`
 * into `dir`, and installs the tarball offline into the empty folder `dir/app` (no dependencies to
 * fetch). Returns `dir/app`: plain `.mjs`/`.cjs` files written there can `import`/`require`
 * '@taskapi/client'.
 */
export async function installClientPackage(dir: string): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  // The npm that runs the tests may set npm_config_* variables (workspace, prefix…) that would
  // apply to these commands too; they get only the plain environment.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: CLIENT_DIR, env, maxBuffer: 16 * 1024 * 1024 });
  const [tarball] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ filename: string }>;
  if (!tarball) throw new Error(`npm pack named no tarball: ${packed.stdout}`);
  const app = path.join(dir, 'app');
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'taskapi-client-check', private: true }, null, 2)}\n`);
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', path.join(dir, path.basename(tarball.filename))], { cwd: app, env });
  return app;
}
