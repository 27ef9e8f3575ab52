import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { EngineFile } from '../engines/engine';

/** A stored file as listed in `tasks.files`. */
export interface StoredFile {
  name: string;
  content_type: string;
  size: number;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Task output files under `FILES_DIR/<public_id>/<name>` (a volume shared with the API). */
export interface FileStore {
  save(publicId: string, files: readonly EngineFile[]): Promise<StoredFile[]>;
  remove(publicId: string): Promise<void>;
}

export function createFileStore(root: string): FileStore {
  return {
    async save(publicId, files) {
      if (files.length === 0) return [];
      const dir = path.join(root, publicId);
      await fs.mkdir(dir, { recursive: true });
      const stored: StoredFile[] = [];
      for (const file of files) {
        if (!SAFE_NAME.test(file.name)) throw new Error(`unsafe file name from engine: ${JSON.stringify(file.name)}`);
        // Write then rename: a reader (or a duplicate run of the same task) never sees a partial file.
        const tmp = path.join(dir, `.${file.name}.${randomBytes(6).toString('hex')}.tmp`);
        await fs.writeFile(tmp, file.data);
        await fs.rename(tmp, path.join(dir, file.name));
        stored.push({ name: file.name, content_type: file.contentType, size: file.data.length });
      }
      return stored;
    },
    async remove(publicId) {
      await fs.rm(path.join(root, publicId), { recursive: true, force: true });
    },
  };
}
