import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { assertSafeKey, StorageUnavailableError, type FileStore, type StoredObject } from './file-store';

const MISSING = new Set(['ENOENT', 'ENOTDIR']);
/** Objects per page of a listing. */
const LIST_PAGE = 1000;

/** Anything but "no such file" means the directory is not usable (permissions, full disk, gone mount). */
function unavailable(err: unknown, what: string): never {
  throw new StorageUnavailableError(`file store directory: ${what} failed: ${(err as Error).message}`, { cause: err });
}

/** `STORAGE_DRIVER=fs`: objects are files under `root` (`FILES_DIR`), a volume every replica shares. */
export function createFsStore(root: string): FileStore {
  const pathOf = (key: string) => {
    assertSafeKey(key);
    return path.join(root, ...key.split('/'));
  };
  return {
    description: `fs:${root}`,
    async put(key, body) {
      const target = pathOf(key);
      try {
        await fs.mkdir(path.dirname(target), { recursive: true });
        // Write then rename: a reader (or a duplicate run of the same task) never sees a partial file.
        const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
        try {
          if (Buffer.isBuffer(body)) await fs.writeFile(tmp, body);
          else await pipeline(body.stream, createWriteStream(tmp));
          await fs.rename(tmp, target);
        } catch (err) {
          // Only a failed write leaves a temporary file (after the rename there is none to remove).
          await fs.rm(tmp, { force: true });
          throw err;
        }
      } catch (err) {
        unavailable(err, 'write');
      }
    },
    async get(key, range) {
      const file = pathOf(key);
      let size: number;
      try {
        const stat = await fs.stat(file);
        if (!stat.isFile()) return null;
        size = stat.size;
      } catch (err) {
        if (MISSING.has((err as NodeJS.ErrnoException).code ?? '')) return null;
        unavailable(err, 'read');
      }
      return { size, contentType: undefined, body: createReadStream(file, range ? { start: range.start, end: range.end } : {}) };
    },
    async head(key) {
      try {
        const stat = await fs.stat(pathOf(key));
        return stat.isFile() ? { size: stat.size, contentType: undefined } : null;
      } catch (err) {
        if (MISSING.has((err as NodeJS.ErrnoException).code ?? '')) return null;
        unavailable(err, 'stat');
      }
    },
    async deleteMany(keys) {
      try {
        const dirs = new Set<string>();
        for (const key of keys) {
          const file = pathOf(key);
          await fs.rm(file, { force: true });
          dirs.add(path.dirname(file));
        }
        // Leave no empty task directories behind; a directory that still has files stays.
        for (const dir of dirs) await fs.rmdir(dir).catch(() => undefined);
      } catch (err) {
        unavailable(err, 'delete');
      }
    },
    async *list(prefix) {
      const folder = prefix.replace(/\/+$/, '');
      assertSafeKey(folder);
      let entries;
      try {
        entries = await fs.readdir(path.join(root, ...folder.split('/')), { recursive: true, withFileTypes: true });
      } catch (err) {
        if (MISSING.has((err as NodeJS.ErrnoException).code ?? '')) return;
        unavailable(err, 'list');
      }
      const page: StoredObject[] = [];
      for (const entry of entries) {
        // Temporary files of writes in progress are not objects yet.
        if (!entry.isFile() || entry.name.startsWith('.')) continue;
        const file = path.join(entry.parentPath, entry.name);
        const stat = await fs.stat(file).catch(() => undefined);
        if (!stat) continue;
        page.push({ key: path.relative(root, file).split(path.sep).join('/'), lastModified: stat.mtime });
        if (page.length === LIST_PAGE) yield page.splice(0);
      }
      if (page.length > 0) yield page;
    },
    async checkWritable() {
      const probe = path.join(root, `.writable-probe-${process.pid}-${randomBytes(4).toString('hex')}`);
      try {
        await fs.mkdir(root, { recursive: true });
        await fs.writeFile(probe, 'ok');
        await fs.rm(probe, { force: true });
      } catch (err) {
        unavailable(err, `write to ${root}`);
      }
    },
  };
}
