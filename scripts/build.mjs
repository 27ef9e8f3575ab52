#!/usr/bin/env node
// `npm run build`: compiles every service entry point, with the workspace packages it imports, to
// one CommonJS file each under dist/ (source maps beside them), and copies the console's static
// files and the Redis commands (`.lua`) next to them. Dependencies from node_modules stay external: production installs them with
// `npm ci --omit=dev`. Type checking is `npm run typecheck`; this step only emits JavaScript.
//
// Why a bundler (esbuild) rather than tsc project references: the workspace packages keep pointing
// at their TypeScript sources (tests and typecheck use them as they are, no per-package dist/ or
// export conditions), each service starts by loading one file instead of a few hundred, and the
// whole build takes about a second, so tests can build what they start.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist');

/** dist/<name>.js ← source entry; `npm run start:*`, `migrate`, `admin` and the image run these. */
export const ENTRIES = {
  api: 'services/api/src/main.ts',
  worker: 'services/worker/src/main.ts',
  'webhook-dispatcher': 'services/webhook-dispatcher/src/main.ts',
  migrate: 'scripts/migrate.ts',
  admin: 'services/api/src/admin/main.ts',
  'seed-demo': 'services/api/src/admin/seed-demo.ts',
};

const requireFromRoot = createRequire(path.join(root, 'package.json'));

/**
 * True when a workspace imports its own nested copy of a package (a version the root does not
 * hoist, e.g. @taskapi/egress's ipaddr.js 2 beside express's 1.x): dist/ sits at the root, so an
 * external import would load the root's copy instead.
 */
function nestedCopy(specifier, resolveDir) {
  let own;
  try {
    own = createRequire(path.join(resolveDir, 'index.js')).resolve(specifier);
  } catch {
    return false; // not resolvable with require(): leave it to the installed tree, as before
  }
  try {
    return requireFromRoot.resolve(specifier) !== own;
  } catch {
    return true;
  }
}

/**
 * Workspace packages (`@taskapi/*`) and nested copies of dependencies are compiled in; every
 * other bare import is a dependency.
 */
const externalDependencies = {
  name: 'external-dependencies',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@taskapi/') || path.isAbsolute(args.path)) return undefined;
      if (nestedCopy(args.path, args.resolveDir)) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/**
 * Writes `content` to `file` by renaming a finished temporary file over it, so a process starting
 * meanwhile (tests build while other tests start services) reads the old file or the new one,
 * never half of one. Unchanged files are left alone.
 */
function writeAtomically(file, content) {
  if (fs.existsSync(file) && Buffer.compare(fs.readFileSync(file), content) === 0) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, file);
}

function filesUnder(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

export async function buildAll({ quiet = false } = {}) {
  const started = Date.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, entry]) => [name, path.join(root, entry)])),
    outdir,
    write: false,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // The oldest Node we still start on (the machines' Node 20); the image runs Node 24.
    target: 'node20',
    sourcemap: 'linked',
    sourcesContent: false,
    // Error and class names stay readable in logs and stack traces.
    keepNames: true,
    logLevel: 'warning',
    plugins: [externalDependencies],
  });
  const written = new Set();
  for (const file of result.outputFiles) {
    writeAtomically(file.path, file.contents);
    written.add(file.path);
  }
  const consoleSrc = path.join(root, 'services/api/src/console');
  for (const dir of ['views', 'public']) {
    for (const file of filesUnder(path.join(consoleSrc, dir))) {
      const target = path.join(outdir, 'console', path.relative(consoleSrc, file));
      writeAtomically(target, fs.readFileSync(file));
      written.add(target);
    }
  }
  // Redis commands (`<workspace>/src/commands/**/*.lua`, loaded at start by @taskapi/redis-scripts):
  // each workspace's under dist/lua/<its folder name>, where commandsFolder looks in a bundle.
  for (const workspace of ['packages', 'services'].flatMap((group) => fs.readdirSync(path.join(root, group)).map((name) => path.join(root, group, name)))) {
    const commands = path.join(workspace, 'src/commands');
    for (const file of filesUnder(commands).filter((f) => f.endsWith('.lua'))) {
      const target = path.join(outdir, 'lua', path.basename(workspace), path.relative(commands, file));
      writeAtomically(target, fs.readFileSync(file));
      written.add(target);
    }
  }
  // The quickstart's scripts, which /docs shows as they are (QUICKSTART_SNIPPETS in
  // services/api/src/routes/docs.ts): those files only, not whatever else the folder holds
  // (a __pycache__, an editor's backup).
  for (const name of ['quickstart.sh', 'quickstart.py', 'quickstart.mjs']) {
    const target = path.join(outdir, 'docs/quickstart', name);
    writeAtomically(target, fs.readFileSync(path.join(root, 'docs/quickstart', name)));
    written.add(target);
  }
  // Whatever an earlier build left that this one did not write (a removed entry or asset).
  for (const file of filesUnder(outdir)) if (!written.has(file) && !file.endsWith('.tmp')) fs.rmSync(file, { force: true });
  if (!quiet) console.log(`built ${Object.keys(ENTRIES).length} entry points into dist/ in ${Date.now() - started} ms`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildAll().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
