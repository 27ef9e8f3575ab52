import type { Readable } from 'node:stream';

/** Bytes to store: a buffer, or a stream of a known length (S3 needs the length up front). */
export type PutBody = Buffer | { stream: Readable; size: number };

/** What a stored object is, without its bytes. */
export interface ObjectInfo {
  size: number;
  /** The type given at `put`; undefined where the driver keeps none (fs). */
  contentType: string | undefined;
}

/** Inclusive byte range, as in an HTTP `Range` header. */
export interface ByteRange {
  start: number;
  end: number;
}

/** How a browser should receive an object fetched through a signed URL. */
export interface SignedGetOptions {
  expiresInSeconds: number;
  contentType: string;
  contentDisposition: string;
  cacheControl: string;
}

/** An object being read: its bytes as a stream, and the whole object's size. */
export interface ObjectStream extends ObjectInfo {
  body: Readable;
}

/**
 * Where task files live: produced outputs under `<public_id>/<name>` and uploaded inputs under
 * `inputs/<public_id>/image`. One interface, two drivers (`STORAGE_DRIVER`): `fs` (a directory
 * shared by every replica) and `s3` (a bucket the operator creates). Every method throws
 * `StorageUnavailableError` when the store cannot be reached or refuses us, so callers can answer
 * 503 / retry instead of treating it as a missing file.
 */
export interface FileStore {
  /** `fs:<dir>` or `s3:<bucket>`, for logs. */
  readonly description: string;
  put(key: string, body: PutBody, contentType: string): Promise<void>;
  /** The object's bytes (only `range` of them when given), or null when there is no such object. */
  get(key: string, range?: ByteRange): Promise<ObjectStream | null>;
  head(key: string): Promise<ObjectInfo | null>;
  /** Deletes those that exist; missing keys are not an error. */
  deleteMany(keys: readonly string[]): Promise<void>;
  /**
   * The objects whose keys start with `prefix` (a folder: `predictions/`), in pages, with when
   * each was last written. For clean-up sweeps, not for serving requests.
   */
  list(prefix: string): AsyncIterable<StoredObject[]>;
  /**
   * A URL that fetches the object without other credentials until it expires, answering with the
   * given headers (an S3 presigned GET). Absent when the driver has none (fs): the API signs its own.
   */
  signedGetUrl?(key: string, opts: SignedGetOptions): Promise<string>;
  /** Resolves when the store exists and accepts a write (and a delete); else throws `StorageUnavailableError`. */
  checkWritable(): Promise<void>;
}

/** One object of a listing. */
export interface StoredObject {
  key: string;
  lastModified: Date;
}

/** The store could not be reached, or refused the request (missing bucket, credentials): retry later. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Keys are `/`-separated plain names: never `..`, absolute, or empty segments. */
export function assertSafeKey(key: string): void {
  if (!key.split('/').every((segment) => SAFE_SEGMENT.test(segment))) throw new Error(`unsafe file-store key: ${JSON.stringify(key)}`);
}

/** Key of one of a task's produced files. */
export const outputKey = (publicId: string, name: string) => `${publicId}/${name}`;

/** Key of a task's uploaded input image. */
export const inputKey = (publicId: string) => `inputs/${publicId}/image`;
