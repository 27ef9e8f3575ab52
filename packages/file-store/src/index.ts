export { assertSafeKey, inputKey, outputKey, StorageUnavailableError } from './file-store';
export type { ByteRange, FileStore, ObjectInfo, ObjectStream, PutBody, SignedGetOptions, StoredObject } from './file-store';
export { createFileStore } from './create-file-store';
export type { FileStoreConfig } from './create-file-store';
export { createFsStore } from './fs-store';
// The S3 store's values are imported from '@taskapi/file-store/src/s3-store' (tests): the services
// reach it only through createFileStore, which loads it (and the AWS SDK) for STORAGE_DRIVER=s3 only.
export type { S3StoreOptions } from './s3-store';
export { storeReadiness } from './readiness';
