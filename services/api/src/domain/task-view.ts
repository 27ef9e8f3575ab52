import { parseProgress, TaskStatus } from '@taskapi/domain';
import type { TaskRow } from '../repositories/tasks';
import { taskFiles, type FileUrlOf } from './task-files';

/** A task row as the task repository reads it: JSON columns arrive as source text. */
export type { TaskRow };

const iso = (d: Date | null) => (d ? JSON.stringify(d.toISOString()) : 'null');

/** Where task files are served: the task API (API key) by default; the console has its own route. */
export const API_FILES_ROOT = '/api/tasks';

/** URL of a task's file; `base` is the server's origin, `filesRoot` the route the file is under. */
export function fileUrl(base: string, publicId: string, name: string, filesRoot = API_FILES_ROOT): string {
  return `${base}${filesRoot}/${publicId}/files/${encodeURIComponent(name)}`;
}

/** File URLs that are the authenticated file route under `filesRoot` (the console's, with its session). */
export const routeFileUrls =
  (base: string, filesRoot = API_FILES_ROOT): FileUrlOf =>
  (publicId, file) =>
    fileUrl(base, publicId, file.name, filesRoot);

/**
 * The task's `progress` as the task JSON shows it: null while queued, the running value (from its
 * Redis key, see `TaskReader`) while processing, 1 once completed (tasks that completed before
 * the column existed included), and the kept value of a failed or cancelled one.
 * @param running the stored value of the task's progress key (only read for a processing task)
 */
export function taskProgress(row: TaskRow, running: string | null | undefined): number | null {
  switch (row.status) {
    case TaskStatus.queued:
      return null;
    case TaskStatus.processing:
      return parseProgress(running);
    case TaskStatus.completed:
      return 1;
    default:
      // Stored two-decimal values, rounded again only to drop float4 noise.
      return row.progress === null ? null : Math.round(row.progress * 100) / 100;
  }
}

/** A queued task's place (docs/api.md, "Queue position"); null in every other status. */
export interface TaskQueue {
  /** How many of the account's queued tasks of the same kind and fairness key start before it. */
  ahead: number;
  /** The account is at its cap of running tasks. */
  heldByAccountCap: boolean;
}

/**
 * The public task JSON. Built as text so that `payload` (and `input`/`result`) are emitted exactly
 * as stored, never re-serialized. `progress` (see `taskProgress`) and `queue` are the last members:
 * they change without the row.
 */
export function renderTask(row: TaskRow, urlOf: FileUrlOf, progress: number | null, queue: TaskQueue | null = null): string {
  const place = queue === null || row.status !== TaskStatus.queued ? 'null' : `{"ahead":${queue.ahead},"held_by_account_cap":${queue.heldByAccountCap}}`;
  return `${renderedRow(row, urlOf)},"progress":${progress === null ? 'null' : progress},"queue":${place}}`;
}

/** Everything of the task JSON but `progress` and the closing brace: all of it comes from the row. */
function renderedRow(row: TaskRow, urlOf: FileUrlOf): string {
  // A row without files renders the same every time (its file URLs are what expire): clients poll
  // queued and running tasks, which are served from the read cache as the same row object. Only
  // short texts are kept, so a cached row with a large payload is not held twice. A running
  // task's progress changes without its row: it is never part of the kept text.
  if (row.files !== '[]') return render(row, urlOf);
  const kept = renderedWithoutFiles.get(row);
  if (kept !== undefined) return kept;
  const text = render(row, urlOf);
  if (text.length <= MAX_KEPT_TEXT) renderedWithoutFiles.set(row, text);
  return text;
}

/** Rows are never changed once read (a new state is a new row), so their text can be kept with them. */
const renderedWithoutFiles = new WeakMap<TaskRow, string>();
const MAX_KEPT_TEXT = 2_048;

function render(row: TaskRow, urlOf: FileUrlOf): string {
  const files = taskFiles(row).map((f) => ({
    name: f.name,
    content_type: f.content_type,
    size: f.size,
    url: urlOf(row.public_id, f),
  }));
  return (
    `{"public_id":${JSON.stringify(row.public_id)}` +
    `,"kind":${JSON.stringify(row.kind)}` +
    `,"status":${row.status}` +
    `,"error_code":${row.error_code === null ? 'null' : JSON.stringify(row.error_code)}` +
    `,"error_message":${row.error_message === null ? 'null' : JSON.stringify(row.error_message)}` +
    `,"input":${row.input}` +
    `,"payload":${row.payload ?? 'null'}` +
    `,"callback_url":${row.callback_url === null ? 'null' : JSON.stringify(row.callback_url)}` +
    `,"cost":${row.cost}` +
    `,"created_at":${iso(row.created_at)}` +
    `,"started_at":${iso(row.started_at)}` +
    `,"finished_at":${iso(row.finished_at)}` +
    `,"result":${row.result ?? 'null'}` +
    `,"files":${JSON.stringify(files)}` +
    `,"files_expired_at":${iso(row.files_expired_at)}` +
    `,"priority":${row.priority ?? 'null'}` +
    `,"ttl_seconds":${row.ttl_seconds ?? 'null'}` +
    `,"fairness_key":${row.fairness_key === null ? 'null' : JSON.stringify(row.fairness_key)}`
  );
}
