// Task rows as the dashboard and the task list show them.
import { badge, el, table, time } from './common.js';

export const KIND_LABEL = { 'video-generation': 'Video generation', 'image-generation': 'Image generation', 'face-detection': 'Face detection' };

/** Link to a task's detail page. */
export function taskLink(publicId) {
  return el('a', { href: `/app/tasks/${encodeURIComponent(publicId)}`, class: 'mono' }, publicId);
}

const NO_TASKS = 'No tasks yet. Create one with a paid or trial API key.';

/** `empty`: what an empty list says instead of "no tasks yet" (text or a node), e.g. for a filtered list. */
export function taskTable(tasks, { empty = NO_TASKS } = {}) {
  return table(
    [
      { label: 'Task', render: (t) => taskLink(t.public_id) },
      { label: 'Kind', render: (t) => KIND_LABEL[t.kind] ?? t.kind },
      { label: 'Status', render: (t) => badge(t.status) },
      { label: 'Cost', render: (t) => String(t.cost) },
      { label: 'Created', render: (t) => time(t.created_at) },
      { label: 'Finished', render: (t) => time(t.finished_at) },
    ],
    tasks,
    { caption: 'Tasks, newest first', empty },
  );
}
