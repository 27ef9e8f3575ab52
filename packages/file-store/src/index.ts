export { assertSafeKey, inputKey, outputKey, StorageUnavailableError } from './file-store';
export type { ByteRange, FileStore, ObjectInfo, ObjectStream, PutBody, SignedGetOptions } from './file-store';
export { createFileStore } from './create-file-store';
export type { FileStoreConfig } from './create-file-store';
export { createFsStore } from './fs-store';
export { createS3Client, createS3Store } from './s3-store';
export type { S3StoreOptions } from './s3-store';
export { storeReadiness } from './readiness';
