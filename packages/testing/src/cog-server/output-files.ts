// File outputs (Cog's `Path`) in the prediction JSON. By default a base64 `data:` URL, as coglet
// sends a file when it has no `--upload-url` (docs/http.md, "File uploads"). With `url`, the file
// is served from this server's own `/_files/<prediction id>/<name>` and the output is that URL: the
// shape of an uploaded file, without an upload server, so a client's fetch of URL outputs is tested.
import path from 'node:path';
import { CogFile } from './model';

/** How file outputs appear: `data-url` (Cog's default) or `url` (served from `/_files`). */
export type OutputAs = 'data-url' | 'url';

export class OutputFiles {
  private readonly files = new Map<string, CogFile>();

  constructor(
    private readonly mode: OutputAs,
    /** `http://host:port` of this server, known once it listens. */
    private readonly baseUrl: () => string,
  ) {}

  /** `value` as JSON: each `CogFile` in it (nested in lists and objects too) becomes a URL string. */
  encode(predictionId: string, value: unknown): unknown {
    if (value instanceof CogFile) return this.fileUrl(predictionId, value);
    if (Array.isArray(value)) return value.map((v) => this.encode(predictionId, v));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.encode(predictionId, v)]));
    }
    return value;
  }

  /** A served file, by prediction id and name. */
  get(predictionId: string, name: string): CogFile | undefined {
    return this.files.get(`${predictionId}/${name}`);
  }

  clear(): void {
    this.files.clear();
  }

  private fileUrl(predictionId: string, file: CogFile): string {
    if (this.mode === 'data-url') return `data:${file.contentType};base64,${file.data.toString('base64')}`;
    // Two outputs of one prediction with the same name: the later ones get `-1`, `-2`, ...
    const { name: stem, ext } = path.parse(path.basename(file.name));
    let name = `${stem}${ext}`;
    for (let n = 1; this.files.has(`${predictionId}/${name}`); n++) name = `${stem}-${n}${ext}`;
    this.files.set(`${predictionId}/${name}`, file);
    return `${this.baseUrl()}/_files/${encodeURIComponent(predictionId)}/${encodeURIComponent(name)}`;
  }
}
