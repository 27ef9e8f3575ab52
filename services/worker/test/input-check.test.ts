// The model's declared inputs against what a kind sends (docs/models.md, "The model's inputs,
// checked first"), on OpenAPI documents as Cog serves them: a public face model's, SDXL-like
// choices, and documents that are not a model's at all.
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
