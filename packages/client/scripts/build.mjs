#!/usr/bin/env node
// Builds the publishable package into dist/: index.mjs (ESM) and index.cjs (CommonJS) bundled by
// esbuild for any runtime (platform neutral, no dependencies), browser.mjs (the browser entry, ESM), and declarations from tsc in both
// flavours: `.d.mts` for `import` and `.d.cts` for `require`, so each condition gets types of its
// own module format. Runs on `npm pack` (prepack). Files are written to a temporary directory and
// renamed into place one by one, so two test files building at once never see half a dist/; files
// an earlier build left (that this build does not write) are removed afterwards.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
const dist = path.join(dir, 'dist');
const staging = path.join(dir, `.dist-${process.pid}`);
const declarations = path.join(staging, '.d.ts');
const require = createRequire(import.meta.url);

/**
 * A `.d.ts` of tsc as `.d.mts` or `.d.cts`: relative specifiers get the matching extension
 * (`./errors` → `./errors.mjs`), which resolves to `errors.d.mts` under node16 resolution.
 */
function declarationAs(text, ext) {
  return text.replace(/(\bfrom\s+|\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"]+?)\2/g, (_m, lead, quote, spec) => `${lead}${quote}${spec}.${ext}${quote}`);
}

fs.rmSync(staging, { recursive: true, force: true });
try {
  // The browser entry (watchTask with a read token) is an ES module of its own, for a page's <script type="module">.
  for (const [format, file, entry] of [['esm', 'index.mjs', 'index'], ['cjs', 'index.cjs', 'index'], ['esm', 'browser.mjs', 'browser']]) {
    await build({
      entryPoints: [path.join(dir, `src/${entry}.ts`)],
      outfile: path.join(staging, file),
      bundle: true,
      format,
      platform: 'neutral',
      target: 'es2022',
      define: { __TASKAPI_CLIENT_VERSION__: JSON.stringify(pkg.version) },
      legalComments: 'none',
      logLevel: 'warning',
    });
  }
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(dir, 'tsconfig.build.json'), '--outDir', declarations], { stdio: 'inherit' });
  for (const file of fs.readdirSync(declarations)) {
    if (!file.endsWith('.d.ts')) continue;
    const text = fs.readFileSync(path.join(declarations, file), 'utf8');
    const base = file.slice(0, -'.d.ts'.length);
    fs.writeFileSync(path.join(staging, `${base}.d.mts`), declarationAs(text, 'mjs'));
    fs.writeFileSync(path.join(staging, `${base}.d.cts`), declarationAs(text, 'cjs'));
  }
  fs.rmSync(declarations, { recursive: true, force: true });
  fs.mkdirSync(dist, { recursive: true });
  const written = new Set(fs.readdirSync(staging));
  for (const file of written) fs.renameSync(path.join(staging, file), path.join(dist, file));
  // Stale files of earlier builds (a removed module, the old .d.ts). A concurrent build writes the
  // same names, so nothing it needs is removed.
  for (const file of fs.readdirSync(dist)) if (!written.has(file)) fs.rmSync(path.join(dist, file), { recursive: true, force: true });
} finally {
  fs.rmSync(staging, { recursive: true, force: true });
}
