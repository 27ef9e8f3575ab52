import { createHash } from 'node:crypto';

/**
 * Deterministic procedural art seeded by a prompt: the same prompt always gives the same pixels.
 * A stand-in for a real generative model that still does real rendering work on the CPU.
 */
export interface PromptScene {
  /** Renders one RGBA frame; `t` in [0, 1) animates the scene (0 for still images). */
  render(width: number, height: number, t: number, out: Uint8Array): void;
}

/** A small seeded PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface Blob {
  x: number;
  y: number;
  r: number;
  color: [number, number, number];
  dx: number;
  dy: number;
}

function hsl(h: number, s: number, l: number): [number, number, number] {
  const k = (n: number) => (n + h * 12) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1));
  return [Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255)];
}

export function promptScene(prompt: string): PromptScene {
  const digest = createHash('sha256').update(prompt, 'utf8').digest();
  const rand = prng(digest.readUInt32LE(0));
  const hue = rand();
  const top = hsl(hue, 0.55, 0.25);
  const bottom = hsl((hue + 0.35) % 1, 0.6, 0.55);
  const blobs: Blob[] = Array.from({ length: 4 + (digest[4]! % 5) }, () => ({
    x: rand(),
    y: rand(),
    r: 0.08 + rand() * 0.22,
    color: hsl((hue + rand() * 0.6) % 1, 0.7, 0.45 + rand() * 0.3),
    dx: (rand() - 0.5) * 0.6,
    dy: (rand() - 0.5) * 0.6,
  }));
  const stripes = 3 + (digest[5]! % 9);

  return {
    render(width, height, t, out) {
      const angle = t * Math.PI * 2;
      // Background: a vertical gradient mixed with diagonal waves. sin(a + b) is split into
      // per-column and per-row tables, so the pixel loop has no trigonometry.
      const k = stripes * Math.PI;
      const sinX = new Float64Array(width);
      const cosX = new Float64Array(width);
      for (let x = 0; x < width; x++) {
        const a = (x / (width - 1)) * k + angle;
        sinX[x] = Math.sin(a);
        cosX[x] = Math.cos(a);
      }
      for (let y = 0; y < height; y++) {
        const v = y / (height - 1);
        const sinY = Math.sin(v * k);
        const cosY = Math.cos(v * k);
        let i = y * width * 4;
        for (let x = 0; x < width; x++) {
          const wave = 0.5 + 0.5 * (sinX[x]! * cosY + cosX[x]! * sinY);
          const mix = v * 0.85 + wave * 0.15;
          out[i++] = top[0] + (bottom[0] - top[0]) * mix;
          out[i++] = top[1] + (bottom[1] - top[1]) * mix;
          out[i++] = top[2] + (bottom[2] - top[2]) * mix;
          out[i++] = 255;
        }
      }
      // Soft discs, each blended over its own bounding box only.
      const minSide = Math.min(width, height);
      for (const blob of blobs) {
        const bx = (blob.x + blob.dx * Math.sin(angle)) * width;
        const by = (blob.y + blob.dy * Math.cos(angle)) * height;
        const radius = blob.r * minSide;
        const r2 = radius * radius;
        const x0 = Math.max(0, Math.floor(bx - radius));
        const x1 = Math.min(width - 1, Math.ceil(bx + radius));
        const y0 = Math.max(0, Math.floor(by - radius));
        const y1 = Math.min(height - 1, Math.ceil(by + radius));
        for (let y = y0; y <= y1; y++) {
          const dy2 = (y - by) ** 2;
          for (let x = x0; x <= x1; x++) {
            const d2 = ((x - bx) ** 2 + dy2) / r2;
            if (d2 >= 1) continue;
            const w = (1 - d2) ** 2;
            const i = (y * width + x) * 4;
            out[i] = out[i]! + (blob.color[0] - out[i]!) * w;
            out[i + 1] = out[i + 1]! + (blob.color[1] - out[i + 1]!) * w;
            out[i + 2] = out[i + 2]! + (blob.color[2] - out[i + 2]!) * w;
          }
        }
      }
    },
  };
}

/** Yields to the event loop so timers (job lock renewal, abort) run during long CPU work. */
export function yieldToEventLoop(signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) =>
    setImmediate(() => (signal.aborted ? reject(signal.reason as Error) : resolve())),
  );
}
