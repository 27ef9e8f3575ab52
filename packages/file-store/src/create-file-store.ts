import { createFsStore } from './fs-store';
import type { FileStore } from './file-store';
import type * as S3Store from './s3-store';

/** The part of the configuration (packages/config) that chooses and addresses the store. */
export interface FileStoreConfig {
  storageDriver: 'fs' | 's3';
  filesDir: string;
  s3: { bucket: string | undefined; region: string | undefined; endpoint: string | undefined; forcePathStyle: boolean };
}

/** The store `STORAGE_DRIVER` names (the config checks that `s3` has a bucket and a region). */
export function createFileStore(config: FileStoreConfig): FileStore {
  if (config.storageDriver === 'fs') return createFsStore(config.filesDir);
  const { bucket, region, endpoint, forcePathStyle } = config.s3;
  if (!bucket || !region) throw new Error('STORAGE_DRIVER=s3 needs S3_BUCKET and S3_REGION');
  // Loaded only for STORAGE_DRIVER=s3: the AWS SDK is 6 MB of heap and start time in every process
  // otherwise. (A require, so the bundle keeps it lazy; the package index exports no S3 values.)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createS3Store } = require('./s3-store') as typeof S3Store;
  return createS3Store({ bucket, region, endpoint, forcePathStyle });
}
