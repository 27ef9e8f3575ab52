import { readFileSync } from 'node:fs';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import { createFaceDetectionEngine, TaskInputError, type EngineInput, type FaceBox } from '../src';

const FIXTURES = path.resolve(__dirname, '../../../test/fixtures');
const fixture = (name: string): Buffer => readFileSync(path.join(FIXTURES, name));

function input(data: Buffer, contentType = 'image/png'): EngineInput {
  return { kind: 'face-detection', publicId: 'tsk_test', params: {}, image: { contentType, data } };
}

function faces(result: unknown): FaceBox[] {
  return (result as { face_coordinates: FaceBox[] }).face_coordinates;
}

function chunk(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  const typeAndBody = Buffer.concat([Buffer.from(type, 'latin1'), body]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndBody));
  return Buffer.concat([length, typeAndBody, crc]);
}

/** A well-formed PNG header declaring `width` x `height` RGB, followed by a few bytes of pixel data. */
function pngDeclaring(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit, truecolour, deflate, no filter, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(64))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A white `width` x `height` PNG with the astronaut scaled `k` times (nearest neighbour) at (`left`, `top`). */
function astronautOnCanvas(width: number, height: number, k: number, left: number, top: number): Buffer {
  const src = PNG.sync.read(fixture('astronaut.png'));
  const out = new PNG({ width, height });
  out.data.fill(255);
  for (let y = 0; y < src.height * k; y++) {
    for (let x = 0; x < src.width * k; x++) {
      const from = (Math.floor(y / k) * src.width + Math.floor(x / k)) * 4;
      src.data.copy(out.data, ((top + y) * width + left + x) * 4, from, from + 4);
    }
  }
  return PNG.sync.write(out, { filterType: 0 }); // filter heuristics are slow under jest (cross-realm Math calls)
}

function iou(a: FaceBox, b: Omit<FaceBox, 'score'>): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  const overlap = Math.max(0, w) * Math.max(0, h);
  return overlap / (a.width * a.height + b.width * b.height - overlap);
}

describe('face-detection engine (SSD MobileNet v1 on tfjs-wasm)', () => {
  jest.setTimeout(60_000); // the first task loads the wasm backend and the model
  const engine = createFaceDetectionEngine();
  const signal = (): AbortSignal => new AbortController().signal;

  it('finds the one face in the astronaut photo, in the upper part of the 512x512 image', async () => {
    const out = await engine.run(input(fixture('astronaut.png')), signal());
    expect(Object.keys(out.result as object)).toEqual(['face_coordinates']);
    const found = faces(out.result);
    expect(found).toHaveLength(1);
    const [face] = found as [FaceBox];
    expect(Object.keys(face).sort()).toEqual(['height', 'score', 'width', 'x', 'y']);
    for (const v of [face.x, face.y, face.width, face.height]) expect(Number.isInteger(v)).toBe(true);
    expect(face.score).toBeGreaterThan(0.8);
    expect(face.score).toBeLessThanOrEqual(1);
    expect(Math.round(face.score * 1000)).toBeCloseTo(face.score * 1000, 6);
    // Seen: {x: 181, y: 73, width: 83, height: 102}: a face-sized box, left of centre, near the top.
    expect(face.x).toBeGreaterThanOrEqual(100);
    expect(face.x + face.width).toBeLessThanOrEqual(350);
    expect(face.y).toBeGreaterThanOrEqual(20);
    expect(face.y + face.height).toBeLessThanOrEqual(256);
    expect(face.width).toBeGreaterThanOrEqual(50);
    expect(face.width).toBeLessThanOrEqual(150);
    expect(face.height).toBeGreaterThanOrEqual(60);
    expect(face.height).toBeLessThanOrEqual(180);
  });

  it('finds no face in the coffee photo (PNG)', async () => {
    const out = await engine.run(input(fixture('coffee.png')), signal());
    expect(out.result).toEqual({ face_coordinates: [] });
  });

  it('finds no face in the rocket photo (JPEG)', async () => {
    const out = await engine.run(input(fixture('rocket.jpg'), 'image/jpeg'), signal());
    expect(out.result).toEqual({ face_coordinates: [] });
  });

  it('reports a large image in its own coordinates (downscaled for the detector)', async () => {
    // 3000x1400 with the astronaut doubled at (1000, 200): shrunk by 2, then resized to 1024 wide.
    const out = await engine.run(input(astronautOnCanvas(3000, 1400, 2, 1000, 200)), signal());
    const found = faces(out.result);
    expect(found).toHaveLength(1);
    const [face] = found as [FaceBox];
    expect(face.score).toBeGreaterThan(0.8);
    // Where the face of the 512x512 photo lands, roughly (boxes vary a little with the face's size).
    expect(iou(face, { x: 1000 + 2 * 181, y: 200 + 2 * 73, width: 2 * 83, height: 2 * 102 })).toBeGreaterThan(0.5);
    expect(face.x + face.width).toBeLessThanOrEqual(3000);
    expect(face.y + face.height).toBeLessThanOrEqual(1400);
  });

  it.each([
    ['random bytes', Buffer.from('definitely not an image, just some text bytes')],
    ['an empty buffer', Buffer.alloc(0)],
    ['a truncated PNG', fixture('astronaut.png').subarray(0, 2000)],
    ['a PNG cut inside its header', fixture('astronaut.png').subarray(0, 20)],
    ['a JPEG cut in half', fixture('rocket.jpg').subarray(0, fixture('rocket.jpg').length / 2)],
    ['a GIF', Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1')],
  ])('rejects %s with TaskInputError', async (_name, data) => {
    await expect(engine.run(input(data), signal())).rejects.toBeInstanceOf(TaskInputError);
  });

  it('refuses a PNG declaring 100000x100000 from its header, before decoding it', async () => {
    // pngjs would otherwise allocate width * height * 4 bytes (40 GB) for this 100-byte file.
    await expect(engine.run(input(pngDeclaring(100_000, 100_000)), signal())).rejects.toThrow(
      expect.objectContaining({ name: 'TaskInputError', message: expect.stringMatching(/megapixels/) }),
    );
  });

  it('refuses a JPEG whose frame header declares 65000x65000', async () => {
    const jpeg = Buffer.from(fixture('rocket.jpg'));
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect([jpeg.readUInt16BE(sof + 5), jpeg.readUInt16BE(sof + 7)]).toEqual([427, 640]); // height, width
    jpeg.writeUInt16BE(65_000, sof + 5);
    jpeg.writeUInt16BE(65_000, sof + 7);
    await expect(engine.run(input(jpeg, 'image/jpeg'), signal())).rejects.toThrow(/megapixels/);
  });

  it('rejects with the reason of an already aborted signal', async () => {
    const controller = new AbortController();
    const reason = new Error('task timed out');
    controller.abort(reason);
    await expect(engine.run(input(fixture('astronaut.png')), controller.signal)).rejects.toBe(reason);
  });

  it('rejects a task aborted while it waits behind another detection, which still completes', async () => {
    const first = engine.run(input(fixture('astronaut.png')), signal());
    const controller = new AbortController();
    const second = engine.run(input(fixture('coffee.png')), controller.signal);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(second).rejects.toBe(reason);
    expect(faces((await first).result)).toHaveLength(1);
  });
});
