#!/usr/bin/env node
// A Prisma generator that writes the parsed schema (DMMF datamodel) to JSON. The migration test
// compares it with the live database, so "the migrated database matches schema.prisma" is checked
// against Prisma's own reading of the schema rather than a hand-made copy.
const fs = require('node:fs');
const path = require('node:path');
const { generatorHandler } = require('@prisma/generator-helper');

generatorHandler({
  onManifest() {
    return { prettyName: 'DMMF snapshot', defaultOutput: '../packages/db/src/generated/dmmf.json' };
  },
  async onGenerate(options) {
    const out = options.generator.output?.value;
    if (!out) throw new Error('dmmf-snapshot: output is required');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify(options.dmmf.datamodel, null, 2));
  },
});
