// A job's producer span (docs/architecture.md, "Tracing"): one per job added, each in its own
// task's trace whatever the call that adds them is in, none for a job in no trace, and a plain
// call without the SDK. The SDK runs in a process of its own (its instrumentations patch modules
// as they load), exporting to a collector in this test.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startOtlpReceiver, type OtlpReceiver } from '@taskapi/testing';

const ROOT = path.resolve(__dirname, '../../..');
const A = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const B = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Runs `body` (async, `t` is @taskapi/telemetry) after startTelemetry with `endpoint`, then flushes; returns what it printed. */
async function run(endpoint: string | undefined, body: string): Promise<string> {
  const script = `(async () => {
    const t = require('@taskapi/telemetry');
    t.startTelemetry('worker', { sdkDisabled: false, samplerRatio: 1${endpoint ? `, endpoint: ${JSON.stringify(endpoint)}` : ''} });
    ${body}
    await t.stopTelemetry();
  })().catch((err) => { console.error(err); process.exit(1); });`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } });
  return stdout;
}

describe('inSendSpans', () => {
  let collector: OtlpReceiver;
  beforeAll(async () => {
    collector = await startOtlpReceiver();
  });
  afterAll(() => collector.close());

  it("adds several jobs in one call: a producer span per job in its own task's trace, none for a job in no trace, a failed add's error on each", async () => {
    const out = await run(
      collector.url,
      `
      const jobs = [{ jobId: 'a-1', parent: ${JSON.stringify(A)} }, { jobId: 'none-1', parent: null }, { jobId: 'b-1', parent: t.contextOf(${JSON.stringify(B)}) }];
      // Called inside another trace (a freed slot's run): the spans are not in it.
      const other = t.startSpan('release', { parent: t.contextOf('00-11111111111111111111111111111111-2222222222222222-01') });
      const added = await t.withContext(other.context, () => t.inSendSpans('{tasks-image-generation}', () => jobs, async () => 'added'));
      const both = () => [{ jobId: 'a-2', parent: ${JSON.stringify(A)} }, { jobId: 'b-2', parent: ${JSON.stringify(B)} }];
      const failed = await t.inSendSpans('{webhooks}', both, () => Promise.reject(new Error('Redis is down'))).catch((err) => err.message);
      other.span.end();
      process.stdout.write(JSON.stringify([added, failed]));`,
    );
    expect(JSON.parse(out)).toEqual(['added', 'Redis is down']);
    const a = await collector.waitForTrace('0af7651916cd43dd8448eb211c80319c', (s) => s.length === 2);
    const b = await collector.waitForTrace('4bf92f3577b34da6a3ce929d0e0e4736', (s) => s.length === 2);
    const sent = (queue: string, jobId: string) => ({ 'messaging.system': 'bullmq', 'messaging.operation.type': 'send', 'messaging.destination.name': queue, 'messaging.message.id': jobId });
    expect(a.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      expect.objectContaining({ name: 'send {tasks-image-generation}', kind: 4, parentSpanId: 'b7ad6b7169203331', statusCode: 0, attributes: sent('{tasks-image-generation}', 'a-1') }),
      expect.objectContaining({ name: 'send {webhooks}', kind: 4, parentSpanId: 'b7ad6b7169203331', statusCode: 2, attributes: sent('{webhooks}', 'a-2') }),
    ]);
    expect(b.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      expect.objectContaining({ name: 'send {tasks-image-generation}', kind: 4, parentSpanId: '00f067aa0ba902b7', statusCode: 0, attributes: sent('{tasks-image-generation}', 'b-1') }),
      expect.objectContaining({ name: 'send {webhooks}', kind: 4, parentSpanId: '00f067aa0ba902b7', statusCode: 2, attributes: sent('{webhooks}', 'b-2') }),
    ]);
    // The job in no trace got no span; the releasing call's trace holds only its own.
    expect(collector.trace('11111111111111111111111111111111').map((s) => s.name)).toEqual(['release']);
    expect(collector.spans.filter((s) => s.attributes['messaging.message.id'] === 'none-1')).toEqual([]);
  });

  it('a lone job is added in its span: what the add makes is its child', async () => {
    await run(
      collector.url,
      `await t.inSendSpans('{webhooks}', () => [{ jobId: 'c-1', parent: ${JSON.stringify('00-5bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b8-01')} }], async () => {
        t.startSpan('redis command', {}).span.end();
      });`,
    );
    const spans = await collector.waitForTrace('5bf92f3577b34da6a3ce929d0e0e4737', (s) => s.length === 2);
    const send = spans.find((s) => s.name === 'send {webhooks}')!;
    expect(spans.find((s) => s.name === 'redis command')?.parentSpanId).toBe(send.spanId);
  });

  it('without an endpoint it is a plain call that makes no span', async () => {
    const before = collector.requests;
    const out = await run(
      undefined,
      `let listed = false;
      const answer = await t.inSendSpans('{webhooks}', () => ((listed = true), [{ jobId: 'd-1', parent: ${JSON.stringify(A)} }]), async () => t.activeTraceParent() ?? 'no span');
      process.stdout.write(JSON.stringify([answer, listed]));`,
    );
    // Not even the job list is made.
    expect(JSON.parse(out)).toEqual(['no span', false]);
    expect(collector.requests).toBe(before);
  });
});
