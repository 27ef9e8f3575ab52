import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
// The node-wasm build runs on the tfjs + tfjs-backend-wasm packages installed beside it; the default
// (`main`) build needs tfjs-node, whose native binary is not available here.
import * as faceapi from '@vladmandic/face-api/dist/face-api.node-wasm.js';
import { decodeImage, type RgbImage } from './decode-image';
import { TaskInputError, type Engine, type EngineInput, type EngineOutput } from './engine';
import { abortable } from './abortable';

/** Longest side, in pixels, of the image the detector sees; larger images are scaled down first. */
export const MAX_DETECTION_SIDE = 1024;

/** One detected face, in pixels of the original image. */
export interface FaceBox {
  x: number;
  y: number;
  width: number;
  height: number;
  /** Detector confidence in [0, 1], rounded to 3 decimals. */
  score: number;
}

/** Options of {@link createFaceDetectionEngine}. */
export interface FaceDetectionOptions {
  /** Faces scoring below this are dropped; default 0.5. */
  minScore?: number;
}

let ready: Promise<void> | undefined;

/** Sets up the wasm backend and loads SSD MobileNet v1 from disk, once per process. */
function initialise(): Promise<void> {
  ready ??= (async () => {
    // Files from the installed packages, never a CDN: the worker may have no internet access.
    setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm')) + path.sep);
    if (!(await tf.setBackend('wasm'))) throw new Error('the tfjs wasm backend failed to start');
    await tf.ready();
    const modelDir = path.join(path.dirname(require.resolve('@vladmandic/face-api/package.json')), 'model');
    await faceapi.nets.ssdMobilenetv1.loadFromDisk(modelDir);
  })().catch((err: unknown) => {
    ready = undefined; // let a later task try again rather than failing every task of the process
    throw err;
  });
  return ready;
}

// tfjs-wasm runs one computation at a time on the main thread: queue detections rather than interleave them.
let queue: Promise<unknown> = Promise.resolve();

function serialised<T>(fn: () => Promise<T>): Promise<T> {
  const run = queue.then(fn, fn);
  queue = run.catch(() => undefined); // the chain only orders calls; each caller sees its own outcome
  return run;
}

/**
 * Averages `factor` x `factor` blocks (partial ones at the right and bottom edges included).
 * Done in JS before the image becomes a tensor: the wasm heap grows to fit the largest tensor ever
 * made and never shrinks, and a 40-megapixel image is 480 MB as int32.
 */
export function shrinkByFactor(image: RgbImage, factor: number): RgbImage {
  const { width, height, rgb } = image;
  const outWidth = Math.ceil(width / factor);
  const outHeight = Math.ceil(height / factor);
  const out = new Uint8Array(outWidth * outHeight * 3);
  const sums = new Uint32Array(outWidth * 3);
  for (let oy = 0; oy < outHeight; oy++) {
    sums.fill(0);
    const y0 = oy * factor;
    const y1 = Math.min(height, y0 + factor);
    for (let y = y0; y < y1; y++) {
      let i = y * width * 3;
      for (let x = 0, ox = 0, left = factor; x < width; x++) {
        const o = ox * 3;
        sums[o] = (sums[o] ?? 0) + (rgb[i++] ?? 0);
        sums[o + 1] = (sums[o + 1] ?? 0) + (rgb[i++] ?? 0);
        sums[o + 2] = (sums[o + 2] ?? 0) + (rgb[i++] ?? 0);
        if (--left === 0) {
          ox++;
          left = factor;
        }
      }
    }
    const rows = y1 - y0;
    const base = oy * outWidth * 3;
    for (let ox = 0; ox < outWidth; ox++) {
      const count = rows * (Math.min(width, (ox + 1) * factor) - ox * factor);
      for (let c = 0; c < 3; c++) out[base + ox * 3 + c] = Math.round((sums[ox * 3 + c] ?? 0) / count);
    }
  }
  return { width: outWidth, height: outHeight, rgb: out };
}

/** Runs the detector on `image`, scaled so its longest side is at most {@link MAX_DETECTION_SIDE}. */
async function detect(image: RgbImage, minScore: number): Promise<FaceBox[]> {
  const { width, height } = image;
  const factor = Math.floor(Math.max(width, height) / MAX_DETECTION_SIDE);
  const reduced = factor >= 2 ? shrinkByFactor(image, factor) : image;
  const scale = Math.min(1, MAX_DETECTION_SIDE / Math.max(reduced.width, reduced.height));
  const input = tf.tidy(() => {
    const full = tf.tensor3d(reduced.rgb, [reduced.height, reduced.width, 3], 'int32');
    if (scale === 1) return full;
    const size: [number, number] = [
      Math.max(1, Math.round(reduced.height * scale)),
      Math.max(1, Math.round(reduced.width * scale)),
    ];
    return tf.image.resizeBilinear(full, size);
  });
  let detections: faceapi.FaceDetection[];
  try {
    detections = await faceapi.detectAllFaces(input, new faceapi.SsdMobilenetv1Options({ minConfidence: minScore }));
  } finally {
    input.dispose();
  }
  const faces: FaceBox[] = [];
  for (const detection of detections) {
    // relativeBox is in [0, 1] of the detector's input, so scaling back needs only the original size.
    const box = detection.relativeBox;
    const left = clamp(Math.round(box.left * width), 0, width);
    const top = clamp(Math.round(box.top * height), 0, height);
    const right = clamp(Math.round(box.right * width), 0, width);
    const bottom = clamp(Math.round(box.bottom * height), 0, height);
    if (right <= left || bottom <= top) continue;
    faces.push({ x: left, y: top, width: right - left, height: bottom - top, score: Math.round(detection.score * 1000) / 1000 });
  }
  return faces.sort((a, b) => b.score - a.score);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/**
 * The built-in face-detection engine: SSD MobileNet v1 (face-api) on TensorFlow.js with the wasm
 * backend, models read from the installed package. The result is
 * `{face_coordinates: [{x, y, width, height, score}]}` in pixels of the original image, best score first.
 *
 * The backend and model are loaded on first use and shared by every engine in the process;
 * detections run one at a time. A detection in progress cannot be interrupted, but an aborted
 * signal is honoured before and after each stage and while waiting for the model or the queue.
 */
export function createFaceDetectionEngine(opts: FaceDetectionOptions = {}): Engine {
  const minScore = opts.minScore ?? 0.5;
  return {
    async run(input: EngineInput, signal: AbortSignal): Promise<EngineOutput> {
      signal.throwIfAborted();
      if (!input.image) throw new TaskInputError('face detection needs an image');
      const image = decodeImage(input.image.data);
      signal.throwIfAborted();
      await abortable(initialise(), signal);
      const faces = await abortable(
        serialised(async () => {
          // A task that timed out while queued must not occupy the detector.
          signal.throwIfAborted();
          return detect(image, minScore);
        }),
        signal,
      );
      signal.throwIfAborted();
      return { result: { face_coordinates: faces } };
    },
  };
}
