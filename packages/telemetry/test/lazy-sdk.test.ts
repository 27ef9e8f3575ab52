// Without an OTLP endpoint no process loads the OpenTelemetry SDK, its exporters or its
// instrumentations (docs/architecture.md, "Tracing"): they were about 10 MB of every service's
// heap. Each case runs in a process of its own, which reports the modules it loaded.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../../..');
const HEAVY = ['@opentelemetry/sdk-node', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/instrumentation-http', 'undici'];

async function loadedAfter(code: string): Promise<string[]> {
  const script = `${code}
    const loaded = new Set();
    for (const file of Object.keys(require.cache)) { const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(file); if (m) loaded.add(m[1]); }
    process.stdout.write(JSON.stringify([...loaded]));
    process.exit(0);`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } });
  return (JSON.parse(stdout) as string[]).filter((m) => HEAVY.includes(m)).sort();
}

describe('the tracing SDK is loaded only with an endpoint', () => {
  it("an API process without one (telemetry started, the API's modules loaded) loads none of it, nor undici", async () => {
    const loaded = await loadedAfter(`
      const { startTelemetry, telemetryMode } = require('@taskapi/telemetry');
      startTelemetry('api', { sdkDisabled: false, samplerRatio: 1 });
      if (telemetryMode() !== 'propagate-only') throw new Error(telemetryMode());
      require('./services/api/src/app');
      require('./services/api/src/deps');`);
    expect(loaded).toEqual([]);
  });

  it('with one, the SDK and its instrumentations are loaded and started', async () => {
    const loaded = await loadedAfter(`
      const { startTelemetry, telemetryMode } = require('@taskapi/telemetry');
      startTelemetry('api', { sdkDisabled: false, samplerRatio: 1, endpoint: 'http://127.0.0.1:9' });
      if (telemetryMode() !== 'export') throw new Error(telemetryMode());`);
    expect(loaded).toEqual(['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/instrumentation-http', '@opentelemetry/sdk-node', '@opentelemetry/sdk-trace']);
  });
});
