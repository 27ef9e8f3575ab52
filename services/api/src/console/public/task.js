// One task: status, payload, input, result, files (image and video previews) and its webhook deliveries.
import { api, ApiError, badge, el, fill, notifyError, startPage, time } from './common.js';
import { showDeliveries } from './deliveries-view.js';
import { KIND_LABEL } from './tasks-view.js';

/** The id from `/app/tasks/<id>` (a trailing slash allowed); a broken %-escape is kept as typed. */
function idFromPath() {
  const segment = location.pathname.split('/').filter(Boolean).pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const publicId = idFromPath();

/** Why a task has no webhook deliveries (yet): none is sent without a callback URL or when cancelled. */
function noDeliveries(task) {
  if (!task.callback_url) return 'No webhooks: this task was created without a callback_url.';
  if (task.status === 40) return 'No webhooks: a cancelled task sends none.';
  if (task.status === 0 || task.status === 10) return 'No webhook yet: one is sent to the callback URL when the task completes or fails.';
  return 'No webhook deliveries for this task.';
}

function json(value) {
  return value === null || value === undefined ? 'null' : JSON.stringify(value, null, 2);
}

function summaryRow(term, value) {
  return [el('dt', { text: term }), el('dd', {}, value)];
}

function preview(file) {
  const caption = el('figcaption', {}, el('a', { href: file.url, target: '_blank', rel: 'noopener' }, file.name), ` · ${file.content_type} · ${file.size} bytes`);
  if (file.content_type.startsWith('image/')) {
    return el('figure', { class: 'preview' }, el('img', { src: file.url, alt: `Output image ${file.name}`, loading: 'lazy' }), caption);
  }
  if (file.content_type.startsWith('video/')) {
    return el('figure', { class: 'preview' }, el('video', { src: file.url, controls: true, preload: 'metadata', 'aria-label': `Output video ${file.name}` }), caption);
  }
  return el('figure', { class: 'preview' }, caption);
}

async function render() {
  let task;
  try {
    task = await api(`/api/console/tasks/${encodeURIComponent(publicId)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      const box = document.getElementById('task-missing');
      box.hidden = false;
      box.textContent = err.message;
      return;
    }
    throw err;
  }
  document.getElementById('task-body').hidden = false;
  fill(
    'task-summary',
    summaryRow('Status', badge(task.status)),
    summaryRow('Kind', KIND_LABEL[task.kind] ?? task.kind),
    summaryRow('Cost', `${task.cost} credit${task.cost === 1 ? '' : 's'}`),
    task.error_code ? summaryRow('Error code', el('code', { text: task.error_code })) : null,
    task.error_message ? summaryRow('Error', el('span', { text: task.error_message })) : null,
    summaryRow('Created', time(task.created_at)),
    summaryRow('Started', time(task.started_at)),
    summaryRow('Finished', time(task.finished_at)),
    summaryRow('Callback URL', task.callback_url ? el('span', { class: 'mono url', text: task.callback_url }) : el('span', { class: 'muted', text: 'none' })),
  );
  document.getElementById('task-input').textContent = json(task.input);
  document.getElementById('task-payload').textContent = json(task.payload);
  document.getElementById('task-result').textContent = json(task.result);
  // Retention (RETENTION_DAYS) deleted them: say so rather than "No files.".
  const noFiles = task.files_expired_at ? el('p', { class: 'muted' }, ['Files expired: deleted ', time(task.files_expired_at), '.']) : el('p', { class: 'muted', text: 'No files.' });
  fill('task-files', task.files.length ? el('div', { class: 'previews' }, task.files.map(preview)) : noFiles);
  await showDeliveries('task-deliveries', { publicId, empty: noDeliveries(task) });
}

document.getElementById('task-id').textContent = publicId;
startPage(async () => {
  document.getElementById('refresh').addEventListener('click', () => render().catch(notifyError));
  await render();
});
