// The webhook delivery log (GET /api/webhook-deliveries) with its attempts and a resend button,
// shown on the webhook page (all recent deliveries) and on a task's page (that task's).
import { act, api, badge, el, emptyState, fill, notify, svgEl, table, time } from './common.js';
import { taskLink } from './tasks-view.js';

const EVENT = { 20: 'completed', 30: 'failed' };

// Only a finished delivery can be sent again: the API refuses a pending one (409 DELIVERY_PENDING),
// whose next attempt is already scheduled.
const RESENDABLE = new Set(['succeeded', 'failed']);

/** The receiver's answer to one attempt: its status code, or that none came. */
function responseBadge(a) {
  if (a.status_code === null) return el('span', { class: 'badge badge-failed', text: 'no response' });
  return el('span', { class: `badge ${a.status_code >= 200 && a.status_code < 300 ? 'badge-succeeded' : 'badge-failed'}`, text: `HTTP ${a.status_code}` });
}

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
          responseBadge(a),
          ` · ${a.duration_ms} ms`,
          a.error ? el('span', { class: 'attempt-error', text: ` · ${a.error}` }) : null,
        ),
      ),
    ),
  );
}

/** A latency bar relative to the slowest attempt shown. */
function latencyBar(ms, slowest) {
  return svgEl('svg', { class: 'latency', width: 80, height: 8, 'aria-hidden': 'true' }, svgEl('rect', { width: Math.max(1, Math.round((80 * ms) / Math.max(slowest, 1))), height: 8, rx: 2 }));
}

/**
 * One delivery with every attempt in full (the task page): when it was sent, the receiver's status,
 * how long it took, why it failed, and the start of the answer.
 */
function deliveryCard(delivery, resend) {
  const slowest = Math.max(...delivery.attempts.map((a) => a.duration_ms), 1);
  const titleId = `delivery-${delivery.id}`;
  const when = delivery.state === 'pending'
    ? (delivery.next_attempt_at ? ['Next attempt ', time(delivery.next_attempt_at)] : ['Attempt in progress'])
    : ['Finished ', time(delivery.completed_at)];
  return el(
    'article',
    { class: 'delivery', 'aria-labelledby': titleId, dataset: { delivery: delivery.id } },
    el(
      'div',
      { class: 'delivery-head' },
      el('h3', { id: titleId }, 'Delivery ', el('code', { text: delivery.id })),
      badge(EVENT[delivery.task_status] ?? String(delivery.task_status)),
      badge(delivery.state),
      RESENDABLE.has(delivery.state)
        ? el('button', { type: 'button', class: 'button secondary small', 'aria-label': `Resend delivery ${delivery.id}`, onclick: resend(delivery) }, 'Resend')
        : null,
    ),
    el('p', { class: 'muted delivery-meta' }, 'To ', el('span', { class: 'mono url', text: delivery.url }), ' · created ', time(delivery.created_at), ' · ', ...when),
    delivery.attempts.length === 0
      ? el('p', { class: 'muted', text: 'No attempt yet.' })
      : table(
          [
            { label: '#', render: (a) => String(a.attempt_number) },
            { label: 'Sent', render: (a) => time(a.started_at) },
            { label: 'Response', render: responseBadge },
            { label: 'Latency', render: (a) => el('span', { class: 'latency-cell' }, latencyBar(a.duration_ms, slowest), `${a.duration_ms} ms`) },
            { label: 'Error', render: (a) => (a.error ? el('span', { class: 'attempt-error', text: a.error }) : el('span', { class: 'muted', text: '—' })) },
            { label: 'Answer', render: (a) => (a.response_excerpt ? el('code', { class: 'excerpt', text: a.response_excerpt }) : el('span', { class: 'muted', text: '—' })) },
            // The task's trace, to look the attempt up in a tracing backend.
            { label: 'Trace', render: (a) => (a.trace_id ? el('code', { class: 'mono', text: a.trace_id }) : el('span', { class: 'muted', text: '—' })) },
          ],
          delivery.attempts,
          { caption: `Attempts of delivery ${delivery.id}, oldest first` },
        ),
  );
}

/**
 * Loads and shows deliveries into the element with id `targetId`; `publicId` narrows them to one
 * task; `empty` (text or a node) replaces the default "nothing here" message; `detailed` shows each
 * delivery with all its attempts in full instead of one table row each. When the log cannot be
 * read, says why in place of the table.
 */
export async function showDeliveries(targetId, { publicId, empty, detailed = false } = {}) {
  const params = new URLSearchParams({ limit: '20' });
  if (publicId) params.set('public_id', publicId);
  let page;
  try {
    page = await api(`/api/webhook-deliveries?${params}`);
  } catch (err) {
    fill(targetId, el('p', { class: 'error', text: `The delivery log could not be loaded: ${err.message}` }));
    return;
  }
  const reload = () => showDeliveries(targetId, { publicId, empty, detailed });
  const resend = (delivery) => (event) =>
    act(event.currentTarget, async () => {
      await api(`/api/webhook-deliveries/${encodeURIComponent(delivery.id)}/resend`, { method: 'POST' });
      notify(`Delivery ${delivery.id} queued for resending.`, 'success');
      await reload();
    });
  if (detailed) {
    fill(targetId, page.data.length ? page.data.map((d) => deliveryCard(d, resend)) : typeof empty === 'object' ? empty : emptyState(empty ?? 'No webhook deliveries for this task.'));
    return;
  }
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
