// Redocly's recommended ruleset over the document the API serves: 0 errors, 0 warnings. Runs the
// installed CLI offline (no telemetry, no update check) on the document written to a temp file.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { OpenApiDocument } from '../src/openapi/document';
import { ROUTES } from '../src/routes';

const ROOT = path.resolve(__dirname, '../../..');
const CONFIG = path.join(ROOT, 'redocly.yaml');
const REDOCLY = path.join(ROOT, 'node_modules/.bin/redocly');

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>;
}

describe('redocly lint', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-openapi-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the configuration is the recommended ruleset, nothing switched off or downgraded', () => {
    const lines = fs
      .readFileSync(CONFIG, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
    expect(lines).toEqual(['extends:', '  - recommended']);
  });

  // Both variants the API serves: without PUBLIC_BASE_URL (servers: '/', a relative license URL) and
  // with one (absolute URLs everywhere).
  it.each([
    ['without a public base URL', undefined],
    ['with a public base URL', 'https://api.taskapi.test'],
  ])('reports no error and no warning on the served document, %s', async (_label, baseUrl) => {
    const file = path.join(dir, `openapi-${baseUrl ? 'public' : 'relative'}.json`);
    fs.writeFileSync(file, new OpenApiDocument(ROUTES).json(baseUrl));
    // Exits non-zero on errors; the report says what they are either way.
    const result = await promisify(execFile)(REDOCLY, ['lint', file, '--config', CONFIG, '--format', 'json'], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
    const start = result.stdout.indexOf('{');
    // A report must be there (no JSON at all would otherwise pass as "no problems").
    expect({ found: start >= 0, stderr: start < 0 ? result.stderr : '' }).toEqual({ found: true, stderr: '' });
    const report = JSON.parse(result.stdout.slice(start)) as LintReport;
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  }, 60_000);
});
