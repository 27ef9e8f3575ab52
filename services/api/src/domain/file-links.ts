// `files[].url` of the task API: a link that needs no API key and expires after
// FILE_URL_TTL_SECONDS (docs/operations.md). With an S3 store, a presigned GET of the object; otherwise the
// API's signed-file route, `/api/files/{public_id}/{name}?expires=…&signature=…`, with an HMAC bound
// to the task, the file name and the expiry.
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { outputKey, type FileStore } from '@taskapi/file-store';
import { unavailable } from '../errors';
import type { TaskRow } from '../repositories/tasks';
import { taskFiles, type FileUrlOf } from './task-files';

/** Where the signed-file route lives. */
export const SIGNED_FILES_ROOT = '/api/files';

/** Browsers show images and play videos in place; the name is the file's own (names are plain, see FILE_NAME_SCHEMA). */
export const contentDisposition = (name: string) => `inline; filename="${name}"`;

/** A link may be cached as long as it is valid, and no longer than a day. */
export const cacheControlFor = (remainingSeconds: number) => `private, max-age=${Math.max(0, Math.min(86_400, Math.floor(remainingSeconds)))}`;

export class FileLinks {
  private readonly key: KeyObject;

  constructor(
    private readonly store: FileStore,
    secretsKey: Buffer,
    private readonly ttlSeconds: number,
    private readonly baseUrl: string,
  ) {
    // Its own key, derived from SECRETS_KEY: a file signature never doubles as anything else. Made
    // a KeyObject once: a list page signs a link per file, and importing a raw key for each HMAC
    // cost more than the HMAC.
    this.key = createSecretKey(Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'taskapi file url signature v1', 32)));
  }

  /** The signature of `name` of task `publicId` until `expires` (unix seconds), base64url. */
  signature(publicId: string, name: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${publicId}\n${name}\n${expires}`).digest('base64url');
  }

  /** A signed-file route URL valid until `expires` (unix seconds). */
  routeUrl(publicId: string, name: string, expires: number): string {
    const path = `${SIGNED_FILES_ROOT}/${publicId}/${encodeURIComponent(name)}`;
    return `${this.baseUrl}${path}?expires=${expires}&signature=${this.signature(publicId, name, expires)}`;
  }

  /**
   * Seconds the link has left when `expires` and `signature` are what we signed for this task and
   * name and it has not expired; otherwise null (altered, expired, or moved to another file).
   */
  verify(publicId: string, name: string, expires: string | undefined, signature: string | undefined, nowMs = Date.now()): number | null {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return null;
    const expected = Buffer.from(this.signature(publicId, name, Number(expires)));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const remaining = Number(expires) - nowMs / 1000;
    return remaining > 0 ? remaining : null;
  }

  /** The file URLs of `rows`, signed now (presigning is local: no request to the store). */
  async forRows(rows: readonly TaskRow[]): Promise<FileUrlOf> {
    const expires = Math.floor(Date.now() / 1000) + this.ttlSeconds;
    const presign = this.store.signedGetUrl?.bind(this.store);
    const urls = new Map<string, string>();
    for (const row of rows) {
      for (const file of taskFiles(row)) {
        const url = presign
          ? await presign(outputKey(row.public_id, file.name), {
              expiresInSeconds: this.ttlSeconds,
              contentType: file.content_type,
              contentDisposition: contentDisposition(file.name),
              cacheControl: cacheControlFor(this.ttlSeconds),
            }).catch((err: unknown) => {
              // Presigning is local, but it needs credentials, and their provider (instance metadata,
              // a web identity) can be unreachable: the store is unavailable, not the API broken.
              throw unavailable('storage', err);
            })
          : this.routeUrl(row.public_id, file.name, expires);
        urls.set(`${row.public_id}/${file.name}`, url);
      }
    }
    return (publicId, file) => urls.get(`${publicId}/${file.name}`) ?? this.routeUrl(publicId, file.name, expires);
  }
}
