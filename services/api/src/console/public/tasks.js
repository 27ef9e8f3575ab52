// Task list: filters by status and kind, newest first, "Load more" follows next_cursor. An empty
// list says whether the account has no tasks at all or only none that match the filters.
import { act, api, el, emptyState, fill, notifyError, startPage } from './common.js';
import { taskTable } from './tasks-view.js';

const PAGE_SIZE = 25;
const FILTERS = ['status', 'kind'];
const form = document.getElementById('task-filters');
const loadMore = document.getElementById('load-more');
let tasks = [];
let cursor = null;
// The filters the shown list was loaded with (the form may have been changed since, unapplied).
let applied = new URLSearchParams();

function filters() {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (form.elements[name].value) params.set(name, form.elements[name].value);
  return params;
}

function showFiltersInUrl(params) {
  history.replaceState(null, '', params.size ? `?${params}` : location.pathname);
}

async function clearFilters() {
  for (const name of FILTERS) form.elements[name].value = '';
  showFiltersInUrl(new URLSearchParams());
  await load(false).catch(notifyError);
  form.elements.status.focus();
}

function emptyList() {
  if (applied.size === 0) return undefined; // the table's own "no tasks yet"
  return emptyState(
    'No tasks match these filters.',
    el('button', { type: 'button', id: 'clear-filters', class: 'button secondary small', onclick: clearFilters }, 'Clear filters'),
  );
}

async function load(append) {
  if (!append) applied = filters();
  const params = new URLSearchParams(applied);
  params.set('limit', String(PAGE_SIZE));
  if (append && cursor) params.set('cursor', cursor);
  const page = await api(`/api/console/tasks?${params}`);
  tasks = append ? tasks.concat(page.data) : page.data;
  cursor = page.next_cursor;
  fill('task-list', taskTable(tasks, { empty: emptyList() }), tasks.length ? el('p', { class: 'muted', text: `${tasks.length} shown` }) : null);
  loadMore.hidden = !cursor;
}

startPage(async () => {
  const params = new URLSearchParams(location.search);
  for (const name of FILTERS) if (params.has(name)) form.elements[name].value = params.get(name);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showFiltersInUrl(filters());
    await load(false).catch(notifyError);
  });
  loadMore.addEventListener('click', () => act(loadMore, () => load(true)));
  await load(false);
});
