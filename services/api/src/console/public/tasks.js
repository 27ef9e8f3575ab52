// Task list: filters by status and kind, newest first, "Load more" follows next_cursor.
import { act, api, el, fill, notifyError, startPage } from './common.js';
import { taskTable } from './tasks-view.js';

const PAGE_SIZE = 25;
const form = document.getElementById('task-filters');
const loadMore = document.getElementById('load-more');
let tasks = [];
let cursor = null;

function query(withCursor) {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
  for (const name of ['status', 'kind']) if (form.elements[name].value) params.set(name, form.elements[name].value);
  if (withCursor && cursor) params.set('cursor', cursor);
  return params;
}

async function load(append) {
  const page = await api(`/api/console/tasks?${query(append)}`);
  tasks = append ? tasks.concat(page.data) : page.data;
  cursor = page.next_cursor;
  fill('task-list', taskTable(tasks, { empty: 'No tasks match these filters.' }), el('p', { class: 'muted', text: `${tasks.length} shown` }));
  loadMore.hidden = !cursor;
}

startPage(async () => {
  const params = new URLSearchParams(location.search);
  for (const name of ['status', 'kind']) if (params.has(name)) form.elements[name].value = params.get(name);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const shown = query(false);
    shown.delete('limit');
    history.replaceState(null, '', shown.size ? `?${shown}` : location.pathname);
    await load(false).catch(notifyError);
  });
  loadMore.addEventListener('click', () => act(loadMore, () => load(true)));
  await load(false);
});
