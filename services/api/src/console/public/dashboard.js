// Dashboard: paid balance, what runs and waits (by fairness key), trial grants with remaining quota and
// expiry, usage charts, recent tasks.
import { act, api, badge, download, el, fill, notifyError, startPage, table, time } from './common.js';
import { taskTable } from './tasks-view.js';
import { drawUsage } from './usage-chart.js';

const usageBox = document.getElementById('usage');
const daysSelect = document.getElementById('usage-days');
let usage = null;
// The width the charts were drawn for.
let drawnWidth = 0;

/** Loads the chosen period's usage and draws it; a failure is said in place of the charts. */
async function showUsage() {
  usageBox.setAttribute('aria-busy', 'true');
  try {
    usage = await api(`/api/console/usage?days=${encodeURIComponent(daysSelect.value)}`);
    drawnWidth = usageBox.clientWidth;
    drawUsage(usageBox, usage);
  } catch (err) {
    usage = null;
    usageBox.replaceChildren(el('p', { class: 'error', text: `Usage could not be loaded: ${err.message}` }));
  } finally {
    usageBox.removeAttribute('aria-busy');
  }
}

// The charts are drawn to the width they have: redraw when it changes (a window resize, a phone turned).
new ResizeObserver(() => {
  const width = usageBox.clientWidth;
  if (usage && width !== drawnWidth) {
    drawnWidth = width;
    requestAnimationFrame(() => drawUsage(usageBox, usage));
  }
}).observe(usageBox);

/** A grant's state in one word: usable, expired or used up. */
function grantState(grant) {
  if (new Date(grant.expires_at).getTime() <= Date.now()) return 'expired';
  return grant.quota_remaining > 0 ? 'usable' : 'exhausted';
}

/** The period on the charts, from the same usage query, as a CSV file (GET /api/usage). */
async function downloadUsage() {
  if (!usage) return;
  const query = new URLSearchParams({ from: usage.from, to: usage.to, group_by: document.getElementById('usage-group').value });
  await download(`/api/usage?${query}`, 'text/csv');
}

startPage(async (session) => {
  document.getElementById('api-version').textContent = session.api_version;
  daysSelect.addEventListener('change', () => showUsage().catch(notifyError));
  document.getElementById('usage-csv').addEventListener('click', (event) => act(event.currentTarget, downloadUsage));
  const shown = showUsage();
  const [balance, tasks, concurrency, fairnessKeys] = await Promise.all([
    api('/api/credits/balance'),
    api('/api/console/tasks?limit=10'),
    api('/api/console/concurrency'),
    api('/api/console/fairness-keys'),
  ]);
  document.getElementById('paid-balance').textContent = String(balance.paid_balance);
  document.getElementById('running-now').textContent = String(concurrency.running);
  document.getElementById('max-running').textContent = String(concurrency.max_running);
  document.getElementById('running-waiting').textContent =
    concurrency.waiting === 0
      ? 'Nothing waiting. Tasks over your limit wait their turn; they are never refused.'
      : `${concurrency.waiting} waiting for a worker` +
        (concurrency.held_by_cap > 0 ? `, ${concurrency.held_by_cap} of them because ${concurrency.max_running} are running (your limit).` : '.');
  fill(
    'fairness-keys',
    table(
      [
        { label: 'Kind', render: (g) => el('span', { text: g.kind }) },
        { label: 'Fairness key', render: (g) => (g.fairness_key === null ? el('span', { class: 'muted', text: 'none' }) : el('code', { text: g.fairness_key })) },
        { label: 'Waiting', render: (g) => el('strong', { text: String(g.waiting) }) },
        { label: 'Running', render: (g) => el('span', { text: String(g.running) }) },
      ],
      fairnessKeys.data,
      { caption: 'Waiting by fairness key', empty: 'Nothing waiting or running.' },
    ),
  );
  fill(
    'grants',
    table(
      [
        { label: 'Grant', render: (g) => el('span', { class: 'mono', text: g.id }) },
        { label: 'Remaining', render: (g) => el('span', {}, el('strong', { text: String(g.quota_remaining) }), ` of ${g.quota_total}`) },
        { label: 'Expires', render: (g) => time(g.expires_at) },
        { label: 'State', render: (g) => badge(grantState(g)) },
        { label: 'Key', render: (g) => (g.bound_key_prefix ? el('code', { text: g.bound_key_prefix }) : el('span', { class: 'muted', text: 'none' })) },
      ],
      balance.trial_grants,
      { caption: 'Trial grants', empty: 'No trial grants. The operator grants trials.' },
    ),
  );
  fill('recent-tasks', taskTable(tasks.data));
  await shown;
});
