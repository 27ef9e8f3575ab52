import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GifReader } from 'omggif';

/** What a decoder says about a video file. */
export interface VideoFacts {
  codec: 'gif' | 'h264';
  width: number;
  height: number;
  frames: number;
  durationSeconds: number;
}

/**
 * Decodes a video the way a player would: an animated GIF frame by frame (omggif), an MP4 with the
 * system ffprobe (stream facts) and ffmpeg (a full decode, which fails on a corrupt stream).
 */
export function inspectVideo(data: Buffer, contentType: string): VideoFacts {
  if (contentType === 'image/gif') {
    const gif = new GifReader(new Uint8Array(data));
    const pixels = new Uint8Array(gif.width * gif.height * 4);
    let centiseconds = 0;
    for (let i = 0; i < gif.numFrames(); i++) {
      gif.decodeAndBlitFrameRGBA(i, pixels);
      centiseconds += gif.frameInfo(i).delay;
    }
    return { codec: 'gif', width: gif.width, height: gif.height, frames: gif.numFrames(), durationSeconds: centiseconds / 100 };
  }
  if (contentType !== 'video/mp4') throw new Error(`not a video type: ${contentType}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inspect-video-'));
  const file = path.join(dir, 'video.mp4');
  try {
    fs.writeFileSync(file, data);
    const probe = JSON.parse(
      execFileSync('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries',
        'stream=codec_name,width,height,nb_read_frames:format=duration', '-of', 'json', file], { encoding: 'utf8' }),
    ) as { streams: Array<{ codec_name: string; width: number; height: number; nb_read_frames: string }>; format: { duration: string } };
    execFileSync('ffmpeg', ['-v', 'error', '-xerror', '-i', file, '-f', 'null', '-'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const stream = probe.streams[0];
    if (!stream || stream.codec_name !== 'h264') throw new Error(`unexpected stream: ${JSON.stringify(stream)}`);
    return {
      codec: 'h264',
      width: stream.width,
      height: stream.height,
      frames: Number(stream.nb_read_frames),
      durationSeconds: Number(probe.format.duration),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
