import { createFsStore } from './fs-store';
import type { FileStore } from './file-store';
import { createS3Store } from './s3-store';

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
  return createS3Store({ bucket, region, endpoint, forcePathStyle });
}
