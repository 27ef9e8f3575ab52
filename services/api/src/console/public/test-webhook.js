// The webhook page's "Send test webhook" form: one signed sample POST, and what the receiver
// answered. Everything from the receiver is shown as text (it chooses those bytes).
import { act, api, el, fill } from './common.js';

function showResult(result) {
  const outcome = result.error === null ? `Delivered: HTTP ${result.status_code}` : `Not delivered: ${result.error}`;
  fill(
    'test-result',
    el('p', { id: 'test-outcome', class: result.error === null ? undefined : 'warning', text: outcome }),
    el(
      'dl',
      { class: 'summary' },
      el('dt', { text: 'Task id sent' }),
      el('dd', {}, el('code', { text: result.public_id })),
      el('dt', { text: 'Status' }),
      el('dd', { id: 'test-status', text: result.status_code === null ? 'no answer' : String(result.status_code) }),
      el('dt', { text: 'Latency' }),
      el('dd', { id: 'test-latency', text: `${result.duration_ms} ms` }),
    ),
    el('h3', { text: 'Response (first 1 KB)' }),
    el('pre', { id: 'test-excerpt', class: 'json', tabindex: '0', text: result.response_excerpt ?? '(empty)' }),
  );
}

export function wireTestWebhook() {
  const form = document.getElementById('test-webhook');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    const url = form.elements.url.value.trim();
    return act(form.querySelector('button[type="submit"]'), async () => showResult(await api('/api/webhook-deliveries/test', { method: 'POST', body: { url } })));
  });
}
