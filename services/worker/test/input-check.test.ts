// The model's declared inputs against what a kind sends (docs/models.md, "The model's inputs,
// checked first"), on OpenAPI documents as Cog serves them: a public face model's, SDXL-like
// choices, and documents that are not a model's at all.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@taskapi/logger';
import { waitFor } from '@taskapi/testing';
import { CogServer } from '../src/engines/cog/cog-server';
import { checkInputs, sentInputs } from '../src/engines/cog/input-check';

/** `GET /openapi.json` of a Cog model with these `Input` properties and required names. */
const cogDocument = (properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}) => ({
  openapi: '3.0.2',
  info: { title: 'Cog', version: '0.1.0' },
  components: { schemas: { Input: { title: 'Input', type: 'object', properties, required }, ...extra } },
});

// tencentarc/gfpgan's predict(): img: Path (required), version: str (choices, default v1.4), scale: float = 2.
const GFPGAN = cogDocument(
  {
    img: { title: 'Img', type: 'string', format: 'uri', description: 'Input', 'x-order': 0 },
    version: { allOf: [{ $ref: '#/components/schemas/version' }], default: 'v1.4', 'x-order': 1 },
    scale: { title: 'Scale', type: 'number', default: 2, description: 'Rescaling factor', 'x-order': 2 },
  },
  ['img'],
  { version: { title: 'version', enum: ['v1.2', 'v1.3', 'v1.4', 'RestoreFormer'], type: 'string' } },
);

describe('checkInputs', () => {
  it("finds a public face model's required input that nothing fills, and the map that fixes it", () => {
    const found = checkInputs(GFPGAN, sentInputs('face-detection', undefined), 'COG_INPUT_MAP_FACE');
    expect(found).toEqual({
      problems: ['its required input "img" gets nothing (the worker sends "image"; rename one with COG_INPUT_MAP_FACE=ours=img)'],
      undeclared: ['image'],
    });
    expect(checkInputs(GFPGAN, sentInputs('face-detection', { image: 'img' }), 'COG_INPUT_MAP_FACE')).toEqual({ problems: [], undeclared: [] });
  });

  it('finds a type that cannot take what is sent; an integer goes where a number is wanted, a string where a choice of strings is', () => {
    const doc = cogDocument(
      {
        prompt: { allOf: [{ $ref: '#/components/schemas/style' }] },
        width: { type: 'string' },
        height: { type: 'number' },
      },
      [],
      { style: { type: 'string', enum: ['a', 'b'] } },
    );
    expect(checkInputs(doc, sentInputs('image-generation', undefined), 'COG_INPUT_MAP_IMAGE')).toEqual({
      problems: ['its input "width" is a string and the worker sends an integer (our "width")'],
      undeclared: [],
    });
    const wantsInteger = cogDocument({ prompt: { type: 'integer' }, duration_seconds: { type: 'integer' } });
    expect(checkInputs(wantsInteger, sentInputs('video-generation', undefined), 'COG_INPUT_MAP_VIDEO')?.problems).toEqual([
      'its input "prompt" is an integer and the worker sends a string (our "prompt")',
    ]);
  });

  it('a renamed field is checked under its new name, and required under it', () => {
    const doc = cogDocument({ seconds: { type: 'integer' }, prompt: { type: 'string' } }, ['seconds', 'prompt']);
    expect(checkInputs(doc, sentInputs('video-generation', { duration_seconds: 'seconds' }), 'COG_INPUT_MAP_VIDEO')).toEqual({ problems: [], undeclared: [] });
    expect(checkInputs(doc, sentInputs('video-generation', undefined), 'COG_INPUT_MAP_VIDEO')?.problems).toEqual([
      'its required input "seconds" gets nothing (the worker sends "prompt", "duration_seconds"; rename one with COG_INPUT_MAP_VIDEO=ours=seconds)',
    ]);
  });

  it('a document that declares no Input the worker can read is "no schema": the model is trusted', () => {
    const sent = sentInputs('image-generation', undefined);
    const hostile: unknown[] = [
      undefined,
      null,
      'text',
      42,
      [],
      {},
      { components: [] },
      { components: { schemas: { Input: 'x' } } },
      { components: { schemas: { Input: { properties: [1, 2] } } } },
      cogDocument(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, { type: 'string' }])), ['f0']),
    ];
    for (const doc of hostile) expect(checkInputs(doc, sent, 'COG_INPUT_MAP_IMAGE')).toBeNull();
    // Odd entries inside a real Input are skipped, never thrown on; names are quoted on one line.
    const odd = cogDocument({ prompt: 'x', width: { allOf: 'y' }, height: { allOf: [{ $ref: '#/components/schemas/__proto__' }] } }, ['bad\nname"', 7 as never]);
    expect(checkInputs(odd, sent, 'COG_INPUT_MAP_IMAGE')).toEqual({ problems: [], undeclared: [] });
    const weird = cogDocument({ 'a\nb"c': { type: 'string' } }, ['a\nb"c']);
    expect(checkInputs(weird, sent, 'COG_INPUT_MAP_IMAGE')?.problems[0]).toContain('"a b c"');
  });
});

describe("CogServer: the model's schema and health as a real server answers them", () => {
  let server: http.Server;
  let url: string;
  let health: string = JSON.stringify({ status: 'READY', setup: { started_at: '2026-12-02T00:00:00+00:00', status: 'succeeded' } });
  let openapi: { status: number; body: string } = { status: 200, body: JSON.stringify(GFPGAN) };
  let schemaFetches = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/health-check') return void res.writeHead(200, { 'content-type': 'application/json' }).end(health);
        if (req.url === '/openapi.json') {
          schemaFetches++;
          return void res.writeHead(openapi.status, { 'content-type': 'application/json' }).end(openapi.body);
        }
        res.writeHead(503, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const warnings: string[] = [];
  const logStream = new PassThrough();
  logStream.on('data', (c: Buffer) => {
    for (const line of c.toString().split('\n').filter(Boolean)) {
      const entry = JSON.parse(line) as { level: string; message: string };
      if (entry.level === 'warn') warnings.push(entry.message);
    }
  });
  const logger = createLogger({ service: 'worker', level: 'info', stream: logStream });
  const face = () => new CogServer({ url, maxConcurrency: 1, busyRetryMs: 100, inputs: { sent: sentInputs('face-detection', undefined), mapVariable: 'COG_INPUT_MAP_FACE' }, logger });

  it('a schema that could not be fetched (a 5xx) is asked for again, said once, and then found wanting', async () => {
    openapi = { status: 502, body: 'bad gateway' };
    warnings.length = 0;
    const cog = face();
    try {
      const first = schemaFetches;
      await waitFor(async () => (await cog.inputProblem()) === undefined && schemaFetches >= first + 2, { timeoutMs: 5_000, what: 'two failed fetches' });
      expect(warnings).toEqual(['model server schema could not be fetched; asked again at the next prediction']);
      openapi = { status: 200, body: JSON.stringify(GFPGAN) };
      const problem = await waitFor(() => cog.inputProblem(), { timeoutMs: 5_000, what: 'the schema asked for again' });
      expect(problem).toContain('its required input "img" gets nothing');
      // Kept for this setup: no further fetch while it lasts.
      const fetches = schemaFetches;
      expect(await cog.inputProblem()).toBe(problem);
      expect(schemaFetches).toBe(fetches);
    } finally {
      await cog.close();
    }
  });

  it('a health check far larger than any status, or with prototype keys, is read without harm', async () => {
    openapi = { status: 404, body: '{}' };
    const huge = JSON.stringify({ status: 'SETUP_FAILED', setup: { status: 'failed', logs: `${'downloading weights\n'.repeat(200_000)}CUDA error: out of memory\n` } });
    const hostile = '{"status":"SETUP_FAILED","__proto__":{"status":"READY"},"setup":{"logs":"a\\nweights missing","__proto__":{"logs":"x"}},"constructor":{"prototype":{"polluted":true}}}';
    for (const [body, said] of [
      [huge, `model server ${new URL(url).origin} is SETUP_FAILED`],
      [hostile, `model server ${new URL(url).origin} is SETUP_FAILED: weights missing`],
    ] as const) {
      health = body;
      const cog = face();
      try {
        expect(await cog.health()).toBe('SETUP_FAILED');
        await expect(cog.checkServing()).rejects.toThrow(said);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      } finally {
        await cog.close();
      }
    }
  });
});
