import { decode as decodeJpegData } from 'jpeg-js';
import { PNG } from 'pngjs';
import { TaskInputError } from './engine';

/** Largest image decoded, in pixels: more is refused before any pixel buffer is allocated. */
export const MAX_IMAGE_PIXELS = 40_000_000;

/** A decoded image: 8-bit RGB, row-major, `width * height * 3` bytes. */
export interface RgbImage {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** Formats told apart by their first bytes (the declared content type is not trusted). */
export type ImageFormat = 'png' | 'jpeg';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The format from the file's magic bytes, or `undefined` when it is neither PNG nor JPEG. */
export function sniffImageFormat(data: Buffer): ImageFormat | undefined {
  if (data.length >= 8 && data.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpeg';
  return undefined;
}

/**
 * The dimensions declared in the header (PNG IHDR, JPEG SOFn), read without decoding anything.
 * @throws TaskInputError when the header is missing, truncated or declares an empty image.
 */
export function readImageSize(data: Buffer, format: ImageFormat): { width: number; height: number } {
  const size = format === 'png' ? pngSize(data) : jpegSize(data);
  if (size.width === 0 || size.height === 0) throw new TaskInputError('image has no pixels');
  return size;
}

function pngSize(data: Buffer): { width: number; height: number } {
  // IHDR must be the first chunk: length (4), type (4), width (4), height (4).
  if (data.length < 24 || data.toString('latin1', 12, 16) !== 'IHDR') {
    throw new TaskInputError('the image is not a valid PNG: it has no IHDR header');
  }
  return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
}

function isStartOfFrame(marker: number): boolean {
  // SOF0..SOF15, minus DHT (C4), JPG (C8) and DAC (CC), which share the range.
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpegSize(data: Buffer): { width: number; height: number } {
  let offset = 2; // after SOI
  while (offset + 1 < data.length) {
    if (data[offset] !== 0xff) throw new TaskInputError('JPEG image is corrupt (no marker where one is due)');
    const marker = data[offset + 1];
    if (marker === undefined) break;
    if (marker === 0xff) {
      offset += 1; // fill byte before a marker
      continue;
    }
    offset += 2;
    // Markers without a length field: TEM, RSTn, SOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue;
    if (marker === 0xd9 || marker === 0xda) throw new TaskInputError('JPEG image has no frame header');
    if (offset + 2 > data.length) break;
    const length = data.readUInt16BE(offset);
    if (length < 2) throw new TaskInputError('JPEG image is corrupt (bad segment length)');
    if (isStartOfFrame(marker)) {
      // length (2), precision (1), height (2), width (2)
      if (offset + 7 > data.length) break;
      return { height: data.readUInt16BE(offset + 3), width: data.readUInt16BE(offset + 5) };
    }
    offset += length;
  }
  throw new TaskInputError('JPEG image is truncated');
}

/**
 * Decodes a PNG or JPEG into 8-bit RGB (alpha dropped, 16-bit and palette images converted).
 * The size is checked against `maxPixels` from the header first, so a small file declaring a huge
 * image (a decompression bomb) is refused without allocating its pixels.
 * @throws TaskInputError when the bytes are not PNG/JPEG, cannot be decoded or are too large.
 */
export function decodeImage(data: Buffer, maxPixels: number = MAX_IMAGE_PIXELS): RgbImage {
  const format = sniffImageFormat(data);
  if (!format) throw new TaskInputError('the image is not a JPEG or PNG');
  const { width, height } = readImageSize(data, format);
  if (width * height > maxPixels) {
    throw new TaskInputError(
      `image is ${width}x${height} (${(width * height / 1e6).toFixed(1)} megapixels); at most ${maxPixels / 1e6} megapixels are accepted`,
    );
  }
  let decoded: RgbImage;
  try {
    decoded = format === 'png' ? decodePng(data) : decodeJpeg(data, maxPixels);
  } catch (err) {
    throw new TaskInputError(`${format.toUpperCase()} image cannot be decoded: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  // The decoders trust their own headers; a mismatch with ours means a malformed file.
  if (decoded.width !== width || decoded.height !== height) {
    throw new TaskInputError('image dimensions do not match its header');
  }
  return decoded;
}

function decodePng(data: Buffer): RgbImage {
  const png = PNG.sync.read(data);
  const pixels = png.width * png.height;
  const rgb = new Uint8Array(pixels * 3);
  const rgba = png.data;
  for (let i = 0, o = 0, end = pixels * 4; i < end; i += 4, o += 3) {
    rgb[o] = rgba[i] ?? 0;
    rgb[o + 1] = rgba[i + 1] ?? 0;
    rgb[o + 2] = rgba[i + 2] ?? 0;
  }
  return { width: png.width, height: png.height, rgb };
}

function decodeJpeg(data: Buffer, maxPixels: number): RgbImage {
  const img = decodeJpegData(data, { useTArray: true, formatAsRGBA: false, maxResolutionInMP: maxPixels / 1e6 });
  return { width: img.width, height: img.height, rgb: img.data };
}
