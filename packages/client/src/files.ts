import type { TaskFile } from './generated';
import type { HttpClient } from './http';
import type { RequestOptions } from './tasks';

/** Default time limit of a download, body included: files can be large (videos). */
export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

export interface DownloadOptions extends RequestOptions {
  /**
   * Time limit of the download, answer body included, in milliseconds. Default 300000 (5 min), not
   * the client's `timeoutMs`. A download cut short by it is not restarted (it would start over).
   */
  timeoutMs?: number;
}

export class Files {
  constructor(private readonly http: HttpClient) {}

  /**
   * The bytes of a task's file, fetched from its signed `url` (valid for an hour from the task
   * response that carried it; read the task again for a fresh one). The API key is not sent: the
   * link may point at a storage bucket on another host, and no header of ours is added (a
   * browser would preflight it).
   */
  async download(file: Pick<TaskFile, 'url'>, options: DownloadOptions = {}): Promise<Uint8Array> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new TypeError('download() timeoutMs must be a positive, finite number of milliseconds.');
    const res = await this.http.request<Uint8Array>({
      method: 'GET',
      path: file.url,
      auth: false,
      idempotent: true,
      timeoutMs: Math.min(timeoutMs, 2 ** 31 - 1),
      signal: options.signal,
      as: 'bytes',
    });
    return res.data;
  }
}
