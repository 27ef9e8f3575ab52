import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EngineError } from './engine';

/** True when `ffmpeg` at `command` runs and can encode H.264. */
export function ffmpegCanEncodeH264(command: string): boolean {
  const probe = spawnSync(command, ['-hide_banner', '-encoders'], { encoding: 'utf8', timeout: 10_000 });
  return probe.status === 0 && /\blibx264\b/.test(probe.stdout);
}

export interface Mp4Options {
  command: string;
  width: number;
  height: number;
  fps: number;
  frames: number;
  /** Renders frame `i` (RGBA) into `out`. */
  renderFrame(i: number, out: Uint8Array): void;
  signal: AbortSignal;
}

/**
 * Encodes RGBA frames as an H.264 MP4 (yuv420p, `+faststart`, plays in browsers) with the system
 * ffmpeg. Frames are piped with backpressure; the process is killed when `signal` aborts. The MP4
 * muxer needs a seekable output for faststart, hence the temporary file.
 */
export async function encodeMp4(opts: Mp4Options): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'taskapi-video-'));
  const out = path.join(dir, 'video.mp4');
  try {
    const ffmpeg = spawn(
      opts.command,
      [
        '-hide_banner', '-loglevel', 'error', '-nostdin',
        '-f', 'rawvideo', '-pix_fmt', 'rgba', '-s', `${opts.width}x${opts.height}`, '-r', String(opts.fps), '-i', 'pipe:0',
        '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4', out,
      ],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let stderr = '';
    ffmpeg.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
    // EPIPE when ffmpeg exits early (killed, or failed): its exit status reports what went wrong.
    ffmpeg.stdin.on('error', (err: Error) => (stderr += `\n(stdin: ${err.message})`));
    const exited = new Promise<number | null>((resolve, reject) => {
      ffmpeg.once('error', reject);
      ffmpeg.once('close', (code) => resolve(code));
    });
    let gone = false;
    void exited.finally(() => (gone = true)).catch(() => undefined);
    const onAbort = () => ffmpeg.kill('SIGKILL');
    opts.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const frame = new Uint8Array(opts.width * opts.height * 4);
      for (let i = 0; i < opts.frames; i++) {
        if (opts.signal.aborted || gone) break;
        opts.renderFrame(i, frame);
        // A copy per write: the frame buffer is reused while ffmpeg may still be reading it.
        if (!ffmpeg.stdin.write(Buffer.from(frame))) {
          // A write error (ffmpeg gone) is reported by the exit status below.
          await Promise.race([once(ffmpeg.stdin, 'drain').catch(() => undefined), exited.catch(() => undefined)]);
        }
      }
      ffmpeg.stdin.end();
      const code = await exited;
      if (opts.signal.aborted) throw opts.signal.reason as Error;
      if (code !== 0) throw new EngineError(`ffmpeg failed (${code}): ${stderr.trim()}`, false, 'The video could not be encoded.');
      return await fs.readFile(out);
    } finally {
      opts.signal.removeEventListener('abort', onAbort);
      if (ffmpeg.exitCode === null) ffmpeg.kill('SIGKILL');
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
