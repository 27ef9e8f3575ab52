import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GifReader } from 'omggif';
import { PNG } from 'pngjs';
import { EngineError, TaskInputError } from '../src/engines/engine';
import { createHttpEngine } from '../src/engines/http-engine';
import { createImageGenerationEngine } from '../src/engines/image-generation';
import { inspectVideo } from '@taskapi/testing';
import { resolveVideoFormat } from '../src/engines';
import { ffmpegCanEncodeH264 } from '../src/engines/ffmpeg-mp4';
import { createVideoGenerationEngine } from '../src/engines/video-generation';

const never = () => new AbortController().signal;

describe('image generation engine', () => {
  const engine = createImageGenerationEngine();
  const render = async (prompt: string, width: number, height: number) => {
    const out = await engine.run({ kind: 'image-generation', publicId: 'task_x', params: { prompt, width, height } }, never());
    const file = out.files?.[0];
    if (!file) throw new Error('no file');
    return file;
  };

  it('renders a real PNG of the requested size', async () => {
    const file = await render('a lighthouse at dusk', 320, 200);
    expect(file).toMatchObject({ name: 'image.png', contentType: 'image/png' });
    const png = PNG.sync.read(file.data);
    expect([png.width, png.height]).toEqual([320, 200]);
    // Not a flat fill: the picture has many distinct colours.
    const colours = new Set<number>();
    for (let i = 0; i < png.data.length; i += 4) colours.add(png.data.readUInt32BE(i));
    expect(colours.size).toBeGreaterThan(100);
  });

  it('is deterministic for the same prompt and differs for another', async () => {
    const a = await render('a lighthouse at dusk', 128, 128);
    const b = await render('a lighthouse at dusk', 128, 128);
    const c = await render('a lighthouse at dawn', 128, 128);
    expect(a.data.equals(b.data)).toBe(true);
    expect(a.data.equals(c.data)).toBe(false);
  });

  it('stops when aborted', async () => {
    const ctrl = new AbortController();
    ctrl.abort(new Error('stop'));
    await expect(engine.run({ kind: 'image-generation', publicId: 'task_x', params: { prompt: 'x', width: 64, height: 64 } }, ctrl.signal)).rejects.toThrow('stop');
  });
});

describe('video generation engine: animated GIF', () => {
  const engine = createVideoGenerationEngine({ format: 'gif' });

  it('writes an animated GIF of exactly the requested duration, decodable frame by frame', async () => {
    const out = await engine.run({ kind: 'video-generation', publicId: 'task_x', params: { prompt: 'ocean waves', duration_seconds: 2 } }, never());
    const file = out.files?.[0];
    expect(file).toMatchObject({ name: 'video.gif', contentType: 'image/gif' });
    expect(inspectVideo(file!.data, file!.contentType)).toEqual({ codec: 'gif', width: 320, height: 180, frames: 20, durationSeconds: 2 });
    const gif = new GifReader(new Uint8Array(file!.data));
    expect(gif.loopCount()).toBe(0);
    const first = new Uint8Array(gif.width * gif.height * 4);
    const last = new Uint8Array(gif.width * gif.height * 4);
    gif.decodeAndBlitFrameRGBA(0, first);
    gif.decodeAndBlitFrameRGBA(gif.numFrames() - 1, last);
    // It moves.
    expect(Buffer.from(first).equals(Buffer.from(last))).toBe(false);
    expect(out.result).toEqual({ width: 320, height: 180, duration_seconds: 2, frames: 20, fps: 10, format: 'gif' });
  });

  it('stops mid-render when aborted', async () => {
    const ctrl = new AbortController();
    const run = engine.run({ kind: 'video-generation', publicId: 'task_x', params: { prompt: 'long', duration_seconds: 10 } }, ctrl.signal);
    setImmediate(() => ctrl.abort(new Error('deadline')));
    await expect(run).rejects.toThrow('deadline');
  });
});

// .ci/run installs ffmpeg; on a machine without it, the worker falls back to GIF (tested above).
const withFfmpeg = ffmpegCanEncodeH264('ffmpeg') ? describe : describe.skip;

withFfmpeg('video generation engine: MP4 through the system ffmpeg', () => {
  const engine = createVideoGenerationEngine({ format: 'mp4', ffmpegPath: 'ffmpeg' });

  it('writes an H.264 MP4 of exactly the requested duration that decodes completely', async () => {
    const out = await engine.run({ kind: 'video-generation', publicId: 'task_x', params: { prompt: 'ocean waves', duration_seconds: 2 } }, never());
    const file = out.files?.[0];
    expect(file).toMatchObject({ name: 'video.mp4', contentType: 'video/mp4' });
    const facts = inspectVideo(file!.data, file!.contentType);
    expect(facts).toMatchObject({ codec: 'h264', width: 640, height: 360, frames: 48 });
    expect(facts.durationSeconds).toBeCloseTo(2, 1);
    // faststart: the index (moov) comes before the media data, so browsers start playing at once.
    expect(file!.data.indexOf('moov')).toBeLessThan(file!.data.indexOf('mdat'));
    expect(out.result).toEqual({ width: 640, height: 360, duration_seconds: 2, frames: 48, fps: 24, format: 'mp4' });
  });

  it('kills ffmpeg and rejects when aborted', async () => {
    const ctrl = new AbortController();
    const run = engine.run({ kind: 'video-generation', publicId: 'task_x', params: { prompt: 'long', duration_seconds: 10 } }, ctrl.signal);
    setTimeout(() => ctrl.abort(new Error('deadline')), 50);
    await expect(run).rejects.toThrow('deadline');
  });

  it('auto picks mp4 when ffmpeg can encode H.264, and gif when it cannot; mp4 without ffmpeg is a start-up error', () => {
    expect(resolveVideoFormat({ videoFormat: 'auto', ffmpegPath: 'ffmpeg' })).toBe('mp4');
    expect(resolveVideoFormat({ videoFormat: 'auto', ffmpegPath: '/nonexistent/ffmpeg' })).toBe('gif');
    expect(resolveVideoFormat({ videoFormat: 'gif', ffmpegPath: 'ffmpeg' })).toBe('gif');
    expect(() => resolveVideoFormat({ videoFormat: 'mp4', ffmpegPath: '/nonexistent/ffmpeg' })).toThrow(/VIDEO_FORMAT=mp4 needs ffmpeg/);
  });
});

describe('http engine (external inference server)', () => {
  let server: http.Server;
  let url: string;
  const seen: Array<{ path: string; auth: string | undefined; body: any }> = [];
  let reply: (body: any) => { status: number; body: unknown } | 'hang' = () => ({ status: 200, body: {} });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString());
        seen.push({ path: req.url ?? '', auth: req.headers.authorization, body });
        const r = reply(body);
        if (r === 'hang') return;
        res.writeHead(r.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(r.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const engine = () => createHttpEngine({ url, token: 'inference-token' });

  it('forwards the task and returns the result and files', async () => {
    reply = () => ({ status: 200, body: { result: { faces: 0 }, files: [{ name: 'out.txt', content_type: 'text/plain', data_base64: Buffer.from('hi').toString('base64') }] } });
    const out = await engine().run(
      { kind: 'face-detection', publicId: 'task_1', params: { image_url: 'https://x/y.png' }, image: { contentType: 'image/png', data: Buffer.from('png') } },
      never(),
    );
    expect(out.result).toEqual({ faces: 0 });
    expect(out.files?.[0]?.data.toString()).toBe('hi');
    const last = seen[seen.length - 1]!;
    expect(last.path).toBe('/v1/tasks/face-detection');
    expect(last.auth).toBe('Bearer inference-token');
    expect(last.body).toEqual({
      public_id: 'task_1',
      kind: 'face-detection',
      params: { image_url: 'https://x/y.png' },
      image: { content_type: 'image/png', data_base64: Buffer.from('png').toString('base64') },
    });
  });

  it('422 means the input can never work; 5xx is retryable; other 4xx and bad bodies are not', async () => {
    const run = () => engine().run({ kind: 'image-generation', publicId: 'task_2', params: { prompt: 'x' } }, never());
    reply = () => ({ status: 422, body: { message: 'prompt not allowed' } });
    await expect(run()).rejects.toEqual(new TaskInputError('prompt not allowed'));
    reply = () => ({ status: 503, body: {} });
    await expect(run()).rejects.toMatchObject({ name: 'EngineError', retryable: true });
    reply = () => ({ status: 400, body: {} });
    await expect(run()).rejects.toMatchObject({ name: 'EngineError', retryable: false });
    reply = () => ({ status: 200, body: { files: [{ name: '../escape', content_type: 'x', data_base64: '' }] } });
    await expect(run()).rejects.toBeInstanceOf(EngineError);
  });

  it('is aborted by the signal (the per-kind timeout)', async () => {
    reply = () => 'hang';
    const run = engine().run({ kind: 'video-generation', publicId: 'task_3', params: { prompt: 'x' } }, AbortSignal.timeout(100));
    await expect(run).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('an unreachable server is a retryable failure', async () => {
    const gone = createHttpEngine({ url: 'http://127.0.0.1:1', token: undefined });
    await expect(gone.run({ kind: 'video-generation', publicId: 'task_4', params: {} }, never())).rejects.toMatchObject({ retryable: true });
  });
});
