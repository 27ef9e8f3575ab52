// Webhook page: the signing secret (hidden until shown, copy, rotate), a test webhook and the delivery log.
import { api, confirmedAction, copyText, el, emptyState, fill, notify, startPage, time } from './common.js';
import { showDeliveries } from './deliveries-view.js';
import { wireTestWebhook } from './test-webhook.js';

const toggle = document.getElementById('secret-toggle');
let secret = '';
let shown = false;

function showSecret(view) {
  secret = view.webhook_secret;
  const masked = `${secret.slice(0, 6)}${'•'.repeat(24)}`;
  fill('secret', el('code', { id: 'secret-value', text: shown ? secret : masked }));
  toggle.textContent = shown ? 'Hide secret' : 'Show secret';
  toggle.setAttribute('aria-expanded', String(shown));
  fill('secret-rotated', 'Last rotated ', time(view.rotated_at));
}

startPage(async () => {
  let view = await api('/api/webhook-secret');
  showSecret(view);
  toggle.addEventListener('click', () => {
    shown = !shown;
    showSecret(view);
  });
  document.getElementById('secret-copy').addEventListener('click', () => copyText(secret, document.getElementById('secret-value')));
  document.getElementById('secret-rotate').addEventListener(
    'click',
    confirmedAction(
      {
        title: 'Rotate the webhook secret?',
        message:
          'The current secret stops working immediately: every webhook from now on, including retries of earlier deliveries, is signed with the new secret. Update your receiver right away.',
        confirmLabel: 'Rotate now',
      },
      async () => {
        view = await api('/api/webhook-secret/rotate', { method: 'POST' });
        shown = true;
        showSecret(view);
        notify('Secret rotated. The old secret no longer verifies; update your receiver with the new one shown below.', 'success');
      },
    ),
  );

  wireTestWebhook();

  const filter = document.getElementById('delivery-filter');
  /** Shows the deliveries of one task, or all of them; a task without any says so, with a way back to all. */
  const showFor = (publicId) => {
    filter.elements.public_id.value = publicId;
    history.replaceState(null, '', publicId ? `?public_id=${encodeURIComponent(publicId)}` : location.pathname);
    if (!publicId) return showDeliveries('deliveries');
    const showAll = el('button', { type: 'button', id: 'show-all-deliveries', class: 'button secondary small', onclick: () => showFor('').then(() => filter.elements.public_id.focus()) }, 'Show all deliveries');
    return showDeliveries('deliveries', { publicId, empty: emptyState(`No webhook deliveries for task ${publicId}.`, showAll) });
  };
  filter.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!filter.reportValidity()) return;
    await showFor(filter.elements.public_id.value.trim());
  });
  await showFor(new URLSearchParams(location.search).get('public_id') ?? '');
});
