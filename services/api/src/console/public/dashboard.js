// Dashboard: paid balance, trial grants with remaining quota and expiry, recent tasks.
import { api, badge, el, fill, startPage, table, time } from './common.js';
import { taskTable } from './tasks-view.js';

/** A grant's state in one word: usable, expired or used up. */
function grantState(grant) {
  if (new Date(grant.expires_at).getTime() <= Date.now()) return 'expired';
  return grant.quota_remaining > 0 ? 'usable' : 'exhausted';
}

startPage(async () => {
  const [balance, tasks] = await Promise.all([api('/api/credits/balance'), api('/api/console/tasks?limit=10')]);
  document.getElementById('paid-balance').textContent = String(balance.paid_balance);
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
});
