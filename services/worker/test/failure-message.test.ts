import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEgressClient } from '@taskapi/egress';
import type { FileStore } from '@taskapi/file-store';
import { MAX_IMAGE_BYTES } from '@taskapi/task-kinds';
import { startHttpsReceiver, testCa, type HttpsReceiver } from '@taskapi/testing';
import { failureMessage, INTERNAL_ERROR_MESSAGE, modelUnavailableMessage, safeSentence, storableLine } from '../src/domain/failure-message';
import { loadInputImage } from '../src/domain/input-image';
import type { ClaimedTask } from '@taskapi/task-lifecycle';
import { decideFailure } from '../src/domain/task-failure';
import { decodeImage, EngineBusyError, EngineError } from '@taskapi/engines';
import { CogServer } from '../src/engines/cog/cog-server';

const never = () => new AbortController().signal;

/** What the worker stores when `err` ends a task (the same two calls as run-task.ts). */
function messageFor(err: unknown, timedOut = false, timeoutMs = 30_000): { code: string; message: string } {
  const decision = decideFailure(err, timedOut);
  return { code: decision.code, message: failureMessage(err, decision.code, timeoutMs) };
}

async function caught(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('error_message: fetching image_url (real HTTPS server, real egress client)', () => {
  let receiver: HttpsReceiver;
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  beforeAll(async () => {
    receiver = await startHttpsReceiver((req) => {
      if (req.path === '/missing.png') return 404;
      if (req.path === '/text') return { status: 200, body: 'hello, not an image' };
      if (req.path === '/huge.png') return { status: 200, body: Buffer.concat([png, Buffer.alloc(MAX_IMAGE_BYTES + 1)]) };
      return { status: 200, body: png };
    });
  });
  afterAll(() => receiver.close());

  const task = (imageUrl: string): ClaimedTask => ({ id: '1', public_id: 'task_x', account_id: 'acc', kind: 'face-detection', created_at: new Date(), params: { image_url: imageUrl }, attempts: 1, traceParent: null, upload: null });
  // Only uploads read the file store; these tasks fetch image_url.
  const noStore = undefined as unknown as FileStore;
  const load = (url: string, allowPrivateNetworks = true) =>
    caught(() => loadInputImage(task(url), { egress: createEgressClient({ allowPrivateNetworks, tls: { ca: testCa().caCert } }), store: noStore }, never()));

  it('a 404 names the status', async () => {
    expect(messageFor(await load(receiver.url('/missing.png')))).toEqual({
      code: 'image_fetch_failed',
      message: 'The image at image_url could not be fetched: the server answered 404.',
    });
  });

  it('a private address is refused and says so', async () => {
    expect(messageFor(await load(receiver.url('/ok.png'), false))).toEqual({
      code: 'image_fetch_failed',
      message: 'The image at image_url could not be fetched: the host resolves to a private address (not allowed).',
    });
  });

  it('an image over 8 MiB names the limit', async () => {
    expect(messageFor(await load(receiver.url('/huge.png'))).message).toBe('The image at image_url could not be fetched: it is larger than 8 MiB.');
  });

  it('a body that is not an image is invalid input', async () => {
    expect(messageFor(await load(receiver.url('/text')))).toEqual({ code: 'invalid_input', message: 'The image at image_url is not a JPEG or PNG.' });
  });
});

describe('error_message: decoding, timeout, internal errors', () => {
  it('an upload that is not an image', async () => {
    expect(messageFor(await caught(async () => decodeImage(Buffer.from('GIF89a....'))))).toEqual({ code: 'invalid_input', message: 'The image is not a JPEG or PNG.' });
  });

  it('the deadline names the kind\'s timeout', () => {
    expect(messageFor(new Error('aborted'), true, 30_000)).toEqual({ code: 'timeout', message: 'The task did not finish within 30 s.' });
    expect(messageFor(new Error('aborted'), true, 500).message).toBe('The task did not finish within 0.5 s.');
  });

  it('an unexpected error says only that the task was refunded, never what was thrown', () => {
    const err = new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');
    expect(messageFor(err)).toEqual({ code: 'internal_error', message: INTERNAL_ERROR_MESSAGE });
    expect(INTERNAL_ERROR_MESSAGE).toBe('The task could not be run; it was refunded. Please try again.');
  });

  it('model_unavailable says how long the task waited and to try again', () => {
    expect(modelUnavailableMessage(1_800_450)).toBe(
      'No model server could take the task: they stayed busy or unavailable for 30 min in all. It was not run and was refunded; please try again later.',
    );
    expect(modelUnavailableMessage(2_400)).toContain('for 2 s in all');
    expect(modelUnavailableMessage(10)).toContain('for 1 s in all');
  });
});

describe("error_message: a Cog model server's answers", () => {
  let server: http.Server;
  let url: string;
  let reply: { status: number; body: string } = { status: 200, body: '{}' };
  let health = 'READY';
  let healthExtra: Record<string, unknown> = {};
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/health-check') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: health, ...healthExtra }));
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(reply.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const request = { id: 'task_e-1', input: { prompt: 'x' }, webhook: 'http://api/internal/model-webhooks/x/y', webhook_events_filter: ['completed'] };
  const failWith = async (status: number, body: unknown) => {
    reply = { status, body: typeof body === 'string' ? body : JSON.stringify(body) };
    const cog = new CogServer({ url, maxConcurrency: 2, busyRetryMs: 1000 });
    try {
      return messageFor(await caught(() => cog.startAsync(request, never())));
    } finally {
      await cog.close();
    }
  };

  it("a 4xx names the status, never the server's body", async () => {
    const secrets = ['invalid key sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'cannot read https://user:pa55@models.internal/v1', 'not json at all'];
    for (const message of secrets) {
      expect(await failWith(400, { detail: message })).toEqual({ code: 'engine_error', message: 'The model server refused the task (HTTP 400).' });
    }
  });

  it("a 422 is invalid input: Cog's first validation detail, naming the field, when harmless; else a fixed sentence", async () => {
    expect(await failWith(422, { detail: [{ loc: ['body', 'input', 'prompt'], msg: 'ensure this value has at most 500 characters', type: 'value_error' }] })).toEqual({
      code: 'invalid_input',
      message: 'Prompt: ensure this value has at most 500 characters.',
    });
    expect(await failWith(422, { detail: [{ loc: ['body', 'input', 'prompt'], msg: 'token ghp_abcdefghijklmnopqrstuvwxyz0123 rejected' }] })).toEqual({
      code: 'invalid_input',
      message: 'The input could not be processed; check the task parameters.',
    });
    expect(await failWith(422, 'not json')).toEqual({ code: 'invalid_input', message: 'The model refused the input.' });
  });

  it('a 5xx (after the retries) names the status, never the body', async () => {
    expect(await failWith(500, { detail: 'db at 10.1.2.3 down' })).toEqual({ code: 'engine_error', message: 'The model server failed (HTTP 500). Please try again later.' });
  });

  it('a 503 from a server whose setup failed, that went defunct or is unhealthy is busy (its tasks wait, bounded by MODEL_BUSY_TIMEOUT_MS), with the model\'s reason', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['SETUP_FAILED', { setup: { status: 'failed', logs: 'loading weights\nCUDA error: out of memory\n' } }, 'SETUP_FAILED: CUDA error: out of memory'],
      ['DEFUNCT', {}, 'DEFUNCT'],
      ['UNHEALTHY', { user_healthcheck_error: 'Healthcheck failed: user-defined healthcheck returned False' }, 'UNHEALTHY: Healthcheck failed: user-defined healthcheck returned False'],
    ];
    try {
      for (const [status, extra, said] of cases) {
        health = status;
        healthExtra = extra;
        reply = { status: 503, body: '{"error":"not ready"}' };
        const cog = new CogServer({ url, maxConcurrency: 2, busyRetryMs: 1000 });
        const err = await caught(() => cog.startAsync(request, never()));
        const notReady = await caught(() => cog.checkServing());
        await cog.close();
        expect(err).toBeInstanceOf(EngineBusyError);
        expect((err as EngineBusyError).message).toContain(`(${said})`);
        expect((notReady as Error).message).toBe(`model server ${new URL(url).origin} is ${said}`);
      }
    } finally {
      health = 'READY';
      healthExtra = {};
    }
  });

  it('a 503 whose health check does not answer 200 is a failed attempt (retried), as an unreachable server is', async () => {
    reply = { status: 503, body: '{}' };
    const cog = new CogServer({ url: `${url}/nothing-here`, maxConcurrency: 2, busyRetryMs: 1000 });
    const err = await caught(() => cog.startAsync(request, never()));
    await cog.close();
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).retryable).toBe(true);
    expect(messageFor(err)).toEqual({ code: 'engine_error', message: 'The model server is not available. Please try again later.' });
  });

  it('409, and 503 while the model starts, are busy, not failures', async () => {
    health = 'STARTING';
    for (const status of [409, 503]) {
      reply = { status, body: '{}' };
      const cog = new CogServer({ url, maxConcurrency: 2, busyRetryMs: 1234 });
      const err = await caught(() => cog.startAsync(request, never()));
      await cog.close();
      expect(err).toBeInstanceOf(EngineBusyError);
      expect((err as EngineBusyError).retryInMs).toBe(1234);
    }
    health = 'READY';
  });

  it('an unreachable model server', async () => {
    const gone = new CogServer({ url: 'http://127.0.0.1:1', maxConcurrency: 1, busyRetryMs: 1000 });
    const err = await caught(() => gone.startAsync(request, never()));
    await gone.close();
    expect(err).toBeInstanceOf(EngineError);
    expect(messageFor(err)).toEqual({ code: 'engine_error', message: 'The model server could not be reached. Please try again later.' });
  });
});

describe('storable text', () => {
  it('drops control characters (NUL included) and lone surrogates, caps the length', () => {
    expect(storableLine('a\u0000b\nc\td')).toBe('a b c d');
    expect(storableLine('x\uD800y\uDC00z \uD83D\uDE00')).toBe('x\uFFFDy\uFFFDz \uD83D\uDE00');
    const long = storableLine('é'.repeat(1000));
    expect(long).toHaveLength(300);
    expect(long.endsWith('…')).toBe(true);
    expect(safeSentence('  ')).toBeNull();
    expect(safeSentence(undefined)).toBeNull();
  });

  it('judges engine text whole before cutting it, and refuses internals', () => {
    // A key cut short by the 300-character cap would no longer look like a long opaque string.
    expect(safeSentence(`${'the prompt was refused '.repeat(12)}because it is sk-live-${'A'.repeat(40)}`)).toBeNull();
    for (const internal of [
      'Weights missing on gpu-7.corp.internal:8443 at /srv/models/sd15.',
      'Db user admin:hunter2@10.0.0.5 refused.',
      'upstream 10.0.0.7 did not answer',
      'node fe80::1 unreachable',
      'cannot open C:\\models\\weights.bin',
      'see ~/logs/engine/today',
    ]) expect(safeSentence(internal)).toBeNull();
    expect(safeSentence('prompt is too long (max 1000 characters)')).toBe('Prompt is too long (max 1000 characters).');
    expect(safeSentence('width and height must be multiples of 8')).toBe('Width and height must be multiples of 8.');
    expect(safeSentence(undefined)).toBeNull();
  });
});
