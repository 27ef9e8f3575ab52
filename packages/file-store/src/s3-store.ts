import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { assertSafeKey, StorageUnavailableError, type FileStore } from './file-store';

export interface S3StoreOptions {
  bucket: string;
  region: string;
  /** For S3-compatible stores (MinIO, Swift s3api, Ceph): their URL. Unset: AWS. */
  endpoint?: string;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), which most non-AWS stores need. */
  forcePathStyle?: boolean;
  /** Explicit credentials (tests); otherwise the SDK's standard chain (AWS_ACCESS_KEY_ID, ..., roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

const DELETE_BATCH = 1000;

/** Not-found answers: the object is not there (for a missing bucket see `describeFailure`). */
function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound') && err.$metadata.httpStatusCode === 404;
}

/** A failure the operator can act on, in one sentence (never the credentials). */
function describeFailure(bucket: string, err: unknown): string {
  if (err instanceof S3ServiceException) {
    if (err.name === 'NoSuchBucket') return `bucket "${bucket}" does not exist (the operator creates it before starting the services)`;
    const status = err.$metadata.httpStatusCode;
    if (status === 403) return `access to bucket "${bucket}" denied (${err.name}): check the AWS credentials and the bucket policy`;
    return `bucket "${bucket}": ${err.name} (HTTP ${status ?? '?'})`;
  }
  return `bucket "${bucket}" unreachable: ${(err as Error).message}`;
}

export function createS3Client(opts: S3StoreOptions): S3Client {
  const client = new S3Client({
    region: opts.region,
    endpoint: opts.endpoint,
    forcePathStyle: opts.forcePathStyle,
    // A copy: the SDK annotates the object it is given.
    credentials: opts.credentials && { ...opts.credentials },
    // Only the checksums S3 requires: stream bodies then go as plain PUTs with a length, which every
    // S3-compatible store accepts (aws-chunked trailers are refused by several).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // An unreachable store must fail fast (503 / task retry), not hold requests for minutes.
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 30_000 },
  });
  // DeleteObjects must carry Content-MD5 for stores that predate S3's newer checksums (Swift).
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const request = args.request as { body?: unknown; headers?: Record<string, string> };
      if (context.commandName === 'DeleteObjectsCommand' && typeof request.body === 'string' && request.headers) {
        request.headers['content-md5'] = createHash('md5').update(request.body).digest('base64');
      }
      return next(args);
    },
    { step: 'build', name: 'contentMd5ForDeleteObjects' },
  );
  return client;
}

/** `STORAGE_DRIVER=s3`: objects in one bucket, created by the operator. */
export function createS3Store(opts: S3StoreOptions, client: S3Client = createS3Client(opts)): FileStore {
  const Bucket = opts.bucket;
  const fail = (err: unknown): never => {
    throw new StorageUnavailableError(describeFailure(Bucket, err), { cause: err });
  };
  const checked = (key: string) => {
    assertSafeKey(key);
    return key;
  };
  return {
    description: `s3:${Bucket}`,
    async put(key, body, contentType) {
      const Body = Buffer.isBuffer(body) ? body : body.stream;
      const ContentLength = Buffer.isBuffer(body) ? body.length : body.size;
      await client.send(new PutObjectCommand({ Bucket, Key: checked(key), Body, ContentLength, ContentType: contentType })).catch(fail);
    },
    async get(key, range) {
      try {
        const res = await client.send(
          new GetObjectCommand({ Bucket, Key: checked(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
        );
        // Content-Range "bytes a-b/total" carries the whole size of a ranged answer.
        const total = res.ContentRange ? Number(res.ContentRange.split('/')[1]) : res.ContentLength;
        return { size: total ?? 0, contentType: res.ContentType, body: res.Body as Readable };
      } catch (err) {
        if (isNotFound(err)) return null;
        return fail(err);
      }
    },
    async head(key) {
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket, Key: checked(key) }));
        return { size: res.ContentLength ?? 0, contentType: res.ContentType };
      } catch (err) {
        // HEAD has no body: a 404 is a missing object or a missing bucket; the readiness check tells them apart.
        if (err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404) return null;
        return fail(err);
      }
    },
    async deleteMany(keys) {
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        const Objects = keys.slice(i, i + DELETE_BATCH).map((key) => ({ Key: checked(key) }));
        const res = await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects, Quiet: true } })).catch(fail);
        const failed = (res.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
        if (failed.length > 0) throw new StorageUnavailableError(`bucket "${Bucket}": could not delete ${failed.length} object(s): ${failed[0]?.Code ?? '?'}`);
      }
    },
    async *list(prefix) {
      let ContinuationToken: string | undefined;
      do {
        const res = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken, MaxKeys: DELETE_BATCH })).catch(fail);
        const page = (res.Contents ?? []).filter((o) => o.Key).map((o) => ({ key: o.Key!, lastModified: o.LastModified ?? new Date(0) }));
        if (page.length > 0) yield page;
        ContinuationToken = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },
    signedGetUrl(key, o) {
      // Signed locally (no request): the URL carries the response headers the browser gets.
      const command = new GetObjectCommand({
        Bucket,
        Key: checked(key),
        ResponseContentType: o.contentType,
        ResponseContentDisposition: o.contentDisposition,
        ResponseCacheControl: o.cacheControl,
      });
      return getSignedUrl(client, command, { expiresIn: o.expiresInSeconds });
    },
    async checkWritable() {
      const Key = `.writable-probe/${randomBytes(8).toString('hex')}`;
      await client.send(new PutObjectCommand({ Bucket, Key, Body: 'ok', ContentType: 'text/plain' })).catch(fail);
      await client.send(new DeleteObjectCommand({ Bucket, Key })).catch(fail);
    },
  };
}
