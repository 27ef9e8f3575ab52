import { outputKey, type FileStore } from '@taskapi/file-store';
import type { EngineFile } from '@taskapi/engines';

/** A stored file as listed in `tasks.files`. */
export interface StoredFile {
  name: string;
  content_type: string;
  size: number;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A task's output files in the file store, under `<public_id>/<name>`. */
export interface TaskOutputs {
  save(publicId: string, files: readonly EngineFile[]): Promise<StoredFile[]>;
  remove(publicId: string, files: readonly Pick<StoredFile, 'name'>[]): Promise<void>;
}

export function taskOutputs(store: FileStore): TaskOutputs {
  return {
    async save(publicId, files) {
      const stored: StoredFile[] = [];
      for (const file of files) {
        if (!SAFE_NAME.test(file.name)) throw new Error(`unsafe file name from engine: ${JSON.stringify(file.name)}`);
        // Each put is atomic in both drivers: a reader (or a duplicate run) never sees a partial file.
        await store.put(outputKey(publicId, file.name), file.data, file.contentType);
        stored.push({ name: file.name, content_type: file.contentType, size: file.data.length });
      }
      return stored;
    },
    async remove(publicId, files) {
      await store.deleteMany(files.map((f) => outputKey(publicId, f.name)));
    },
  };
}
