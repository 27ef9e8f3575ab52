// gifenc ships no types; this covers the calls the video engine makes.
declare module 'gifenc' {
  export type Palette = number[][];
  export interface GifWriteOptions {
    palette?: Palette;
    /** Frame delay in milliseconds. */
    delay?: number;
    /** 0 = loop forever. */
    repeat?: number;
  }
  export interface GifEncoder {
    writeFrame(index: Uint8Array, width: number, height: number, opts?: GifWriteOptions): void;
    finish(): void;
    bytes(): Uint8Array;
  }
  export function GIFEncoder(opts?: { auto?: boolean }): GifEncoder;
  export function quantize(rgba: Uint8Array | Uint8ClampedArray, maxColors: number, opts?: Record<string, unknown>): Palette;
  export function applyPalette(rgba: Uint8Array | Uint8ClampedArray, palette: Palette, format?: string): Uint8Array;
}
