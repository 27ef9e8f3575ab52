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
      for (let y = 0; y < height; y++) {
        const v = y / (height - 1);
        for (let x = 0; x < width; x++) {
          const u = x / (width - 1);
          const wave = 0.5 + 0.5 * Math.sin((u + v) * stripes * Math.PI + angle);
          const mix = v * 0.85 + wave * 0.15;
          let r = top[0] + (bottom[0] - top[0]) * mix;
          let g = top[1] + (bottom[1] - top[1]) * mix;
          let b = top[2] + (bottom[2] - top[2]) * mix;
          for (const blob of blobs) {
            const bx = (blob.x + blob.dx * Math.sin(angle)) * width;
            const by = (blob.y + blob.dy * Math.cos(angle)) * height;
            const radius = blob.r * Math.min(width, height);
            const d2 = ((x - bx) ** 2 + (y - by) ** 2) / (radius * radius);
            if (d2 < 1) {
              const w = (1 - d2) ** 2;
              r += (blob.color[0] - r) * w;
              g += (blob.color[1] - g) * w;
              b += (blob.color[2] - b) * w;
            }
          }
          const i = (y * width + x) * 4;
          out[i] = r;
          out[i + 1] = g;
          out[i + 2] = b;
          out[i + 3] = 255;
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
