// One task: its summary, its result for people (thumbnails, a video player, face boxes on the
// image), its files, its webhook deliveries with every attempt, and input, payload and result as JSON.
// While the task is queued or running, its event stream keeps the status and a progress bar live.
import { api, ApiError, badge, el, fill, notifyError, startPage, time } from './common.js';
import { showDeliveries } from './deliveries-view.js';
import { renderFiles, renderOutput } from './task-output.js';
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

/** "2.4 s", "3 min 5 s": how long something took, or null when it has not happened. */
function duration(fromIso, toIso) {
  if (!fromIso || !toIso) return null;
  const ms = new Date(toIso).getTime() - new Date(fromIso).getTime();
  if (ms < 1000) return `${Math.max(0, ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60 ? `${minutes} min ${Math.round((ms % 60_000) / 1000)} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

function timeWithDuration(iso, label, fromIso) {
  const took = duration(fromIso, iso);
  return el('span', {}, time(iso), took ? el('span', { class: 'muted', text: ` (${label} ${took})` }) : null);
}

const isTerminal = (status) => status === 20 || status === 30 || status === 40;

/** `progress` as a bar and a percentage; an indeterminate bar while running without a value yet. */
function progressView(task) {
  if (task.progress === null) {
    if (task.status === 10) return el('span', { class: 'progress' }, el('progress', { 'aria-label': 'Progress' }), el('span', { class: 'muted', text: 'running' }));
    return el('span', { class: 'muted', text: task.status === 0 ? 'not started' : '—' });
  }
  const percent = `${Math.round(task.progress * 100)}%`;
  return el('span', { class: 'progress' }, el('progress', { max: '1', value: String(task.progress), 'aria-label': 'Progress' }), percent);
}

function fetchTask() {
  return api(`/api/console/tasks/${encodeURIComponent(publicId)}`);
}

async function render() {
  let task;
  try {
    task = await fetchTask();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      const box = document.getElementById('task-missing');
      box.hidden = false;
      box.textContent = err.message;
      return;
    }
    throw err;
  }
  await show(task);
  if (!isTerminal(task.status)) follow(task.status);
}

/** The whole page from one task JSON (the deliveries are read again). */
async function show(task) {
  document.getElementById('task-body').hidden = false;
  fill(
    'task-summary',
    summaryRow('Status', badge(task.status)),
    summaryRow('Progress', el('span', { id: 'task-progress' }, progressView(task))),
    summaryRow('Kind', KIND_LABEL[task.kind] ?? task.kind),
    // Failed and cancelled tasks are refunded in full (the Result section says why it failed).
    summaryRow('Cost', `${task.cost} credit${task.cost === 1 ? '' : 's'}${(task.status === 30 || task.status === 40) && task.cost > 0 ? ', refunded' : ''}`),
    summaryRow('Created', time(task.created_at)),
    summaryRow('Started', timeWithDuration(task.started_at, 'after', task.created_at)),
    // A task cancelled (or swept) while queued never started: then the time since its creation.
    summaryRow('Finished', task.started_at ? timeWithDuration(task.finished_at, 'ran', task.started_at) : timeWithDuration(task.finished_at, 'after', task.created_at)),
    summaryRow('Callback URL', task.callback_url ? el('span', { class: 'mono url', text: task.callback_url }) : el('span', { class: 'muted', text: 'none' })),
  );
  document.getElementById('task-input').textContent = json(task.input);
  document.getElementById('task-payload').textContent = json(task.payload);
  document.getElementById('task-result').textContent = json(task.result);
  fill('task-output', renderOutput(task));
  fill('task-files', renderFiles(task));
  await showDeliveries('task-deliveries', { publicId, empty: noDeliveries(task), detailed: true });
}

let events;

/**
 * Follows the task's event stream (session cookie, same origin) until it ends: a progress change
 * updates the bar, a status change the whole page. The browser reconnects by itself after a drop
 * (a server restarting); an error answer (the session ended) closes it, and Refresh still works.
 */
function follow(status) {
  if (events || typeof EventSource !== 'function') return;
  let shown = status;
  events = new EventSource(`/api/console/tasks/${encodeURIComponent(publicId)}/events`);
  events.addEventListener('task', (e) => {
    const task = JSON.parse(e.data);
    if (isTerminal(task.status)) stopFollowing();
    if (task.status === shown) fill('task-progress', progressView(task));
    else show(task).catch(notifyError);
    shown = task.status;
  });
  events.addEventListener('error', () => {
    if (events?.readyState === EventSource.CLOSED) stopFollowing();
  });
}

function stopFollowing() {
  events?.close();
  events = undefined;
}

document.getElementById('task-id').textContent = publicId;
startPage(async () => {
  document.getElementById('refresh').addEventListener('click', () => render().catch(notifyError));
  await render();
});
