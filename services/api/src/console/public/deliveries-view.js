// The webhook delivery log (GET /api/webhook-deliveries) with its attempts and a resend button,
// shown on the webhook page (all recent deliveries) and on a task's page (that task's).
import { act, api, badge, el, fill, notify, table, time } from './common.js';
import { taskLink } from './tasks-view.js';

const EVENT = { 20: 'completed', 30: 'failed' };

// Only a finished delivery can be sent again: the API refuses a pending one (409 DELIVERY_PENDING),
// whose next attempt is already scheduled.
const RESENDABLE = new Set(['succeeded', 'failed']);

function attempts(delivery) {
  const count = `${delivery.attempt_count} attempt${delivery.attempt_count === 1 ? '' : 's'}`;
  if (!delivery.attempts || delivery.attempts.length === 0) return el('span', { class: 'muted', text: count });
  return el(
    'details',
    {},
    el('summary', { text: count }),
    el(
      'ol',
      { class: 'attempts' },
      delivery.attempts.map((a) =>
        el(
          'li',
          {},
          time(a.started_at),
          ' · ',
          a.status_code === null ? el('span', { class: 'badge badge-failed', text: 'no response' }) : el('span', { class: `badge ${a.status_code >= 200 && a.status_code < 300 ? 'badge-succeeded' : 'badge-failed'}`, text: `HTTP ${a.status_code}` }),
          ` · ${a.duration_ms} ms`,
          a.error ? el('span', { class: 'attempt-error', text: ` · ${a.error}` }) : null,
        ),
      ),
    ),
  );
}

/**
 * Loads and shows deliveries into the element with id `targetId`; `publicId` narrows them to one
 * task; `empty` (text or a node) replaces the default "nothing here" message. When the log cannot
 * be read, says why in place of the table.
 */
export async function showDeliveries(targetId, { publicId, empty } = {}) {
  const params = new URLSearchParams({ limit: '20' });
  if (publicId) params.set('public_id', publicId);
  let page;
  try {
    page = await api(`/api/webhook-deliveries?${params}`);
  } catch (err) {
    fill(targetId, el('p', { class: 'error', text: `The delivery log could not be loaded: ${err.message}` }));
    return;
  }
  const reload = () => showDeliveries(targetId, { publicId, empty });
  const resend = (delivery) => (event) =>
    act(event.currentTarget, async () => {
      await api(`/api/webhook-deliveries/${encodeURIComponent(delivery.id)}/resend`, { method: 'POST' });
      notify(`Delivery ${delivery.id} queued for resending.`, 'success');
      await reload();
    });
  fill(
    targetId,
    table(
      [
        { label: 'Task', render: (d) => taskLink(d.public_id) },
        { label: 'Event', render: (d) => badge(EVENT[d.task_status] ?? String(d.task_status)) },
        { label: 'URL', render: (d) => el('span', { class: 'mono url', text: d.url }) },
        { label: 'State', render: (d) => badge(d.state) },
        { label: 'Attempts', render: attempts },
        { label: 'Next attempt', render: (d) => time(d.next_attempt_at) },
        { label: 'Created', render: (d) => time(d.created_at) },
        {
          label: 'Actions',
          render: (d) =>
            RESENDABLE.has(d.state)
              ? el('button', { type: 'button', class: 'button secondary small', 'aria-label': `Resend delivery ${d.id}`, onclick: resend(d) }, 'Resend')
              : el('span', { class: 'muted', text: 'In progress' }),
        },
      ],
      page.data,
      {
        caption: 'Webhook deliveries, newest first',
        empty: empty ?? (publicId ? 'No webhook deliveries for this task.' : 'No webhook deliveries yet. One is sent when a task with a callback_url completes or fails.'),
      },
    ),
  );
}
