import { GifReader } from 'omggif';
import { PNG } from 'pngjs';
import { inspectVideo } from '@taskapi/testing';
import { createImageGenerationEngine, createVideoGenerationEngine, ffmpegCanEncodeH264, resolveVideoFormat } from '../src';

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
