// A task's stored files as its row holds them, and how a view names the URL of each (`FileUrlOf`,
// made by task-view.ts for routes with authentication and by file-links.ts for signed links).
import type { TaskRow } from '../repositories/tasks';

export interface StoredFile {
  name: string;
  content_type: string;
  size: number;
}

/** The URL given for one file of a task. */
export type FileUrlOf = (publicId: string, file: StoredFile) => string;

/** The stored file list of a task row. */
export function taskFiles(row: Pick<TaskRow, 'files'>): StoredFile[] {
  return JSON.parse(row.files) as StoredFile[];
}
