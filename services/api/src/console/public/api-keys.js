// API keys: a paid tab and a trial tab (keyboard-operable tabs). Create, show (reveal, audited),
// copy, reissue and revoke; set, change or remove a key's spend limit, and see what it has spent.
// A new key's plaintext is shown once, with a "store it now" notice.
import { act, api, badge, confirmedAction, copyText, el, fill, notify, startPage, table, time } from './common.js';

const TYPES = ['paid', 'trial'];
const tabs = TYPES.map((type) => document.getElementById(`tab-${type}`));
let grants = [];

// --- Tabs (WAI-ARIA tabs pattern: arrows, Home and End move between tabs; the URL hash remembers). ---

function selectTab(type, { focus = false } = {}) {
  for (const t of TYPES) {
    const tab = document.getElementById(`tab-${t}`);
    const selected = t === type;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
    document.getElementById(`panel-${t}`).hidden = !selected;
    if (selected && focus) tab.focus();
  }
  history.replaceState(null, '', type === 'paid' ? location.pathname : `#${type}`);
}

tabs.forEach((tab, index) => {
  const type = TYPES[index];
  tab.addEventListener('click', () => selectTab(type));
  tab.addEventListener('keydown', (event) => {
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: TYPES.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    selectTab(TYPES[(moves[event.key] + TYPES.length) % TYPES.length], { focus: true });
  });
});

// --- The plaintext of a key that was just created or reissued. ---

const newKey = document.getElementById('new-key');
const newKeyValue = document.getElementById('new-key-value');

function showNewKey(plaintext) {
  newKeyValue.textContent = plaintext;
  newKey.hidden = false;
  newKey.focus();
}

document.getElementById('new-key-copy').addEventListener('click', () => copyText(newKeyValue.textContent, newKeyValue));
document.getElementById('new-key-done').addEventListener('click', () => {
  newKey.hidden = true;
  newKeyValue.textContent = '';
});

// --- Key tables. ---

function grantLabel(grant) {
  const expires = new Date(grant.expires_at).toLocaleDateString(undefined, { dateStyle: 'medium' });
  return `${grant.id} — ${grant.quota_remaining} of ${grant.quota_total} credits left, expires ${expires}`;
}

/** The "Show" button: reveals the plaintext in the row, with Copy and Hide. */
function revealControl(key) {
  const holder = el('div', { class: 'reveal' });
  const showButton = el('button', { type: 'button', class: 'button secondary small', 'aria-label': `Show key ${key.key_prefix}` }, 'Show');
  showButton.addEventListener('click', () =>
    act(showButton, async () => {
      const revealed = await api(`/api/keys/${encodeURIComponent(key.id)}/reveal`, { method: 'POST' });
      const code = el('code', { class: 'revealed-key', text: revealed.plaintext_key });
      const hide = el('button', { type: 'button', class: 'button secondary small', onclick: () => holder.replaceChildren(showButton) }, 'Hide');
      holder.replaceChildren(
        el('div', { class: 'secret' }, code),
        el('div', { class: 'actions' }, el('button', { type: 'button', class: 'button secondary small', onclick: () => copyText(revealed.plaintext_key, code) }, 'Copy'), hide),
      );
      hide.focus();
    }),
  );
  holder.append(showButton);
  return holder;
}

// --- Spend limits: what the key spent in the limit's UTC period, and an inline form to change it. ---

const PERIOD_WORDS = { day: 'today (UTC)', month: 'this month (UTC)' };

function spendText(key) {
  if (!key.spend_limit) return `${key.spent} spent this month (UTC), no limit`;
  return `${key.spent} of ${key.spend_limit.credits} spent ${PERIOD_WORDS[key.spend_limit.period]}`;
}

/** The limit cell: the spend, and for an active key an "Edit limit" button that opens the form in place. */
function spendControl(key) {
  const holder = el('div', { class: 'spend', 'data-key-id': key.id });
  const summary = el('span', { class: 'spend-summary', text: spendText(key) });
  if (key.status !== 'active') {
    holder.append(summary);
    return holder;
  }
  const edit = el('button', { type: 'button', class: 'button secondary small', 'aria-label': `Edit spend limit of key ${key.key_prefix}` }, 'Edit limit');
  edit.addEventListener('click', () => holder.replaceChildren(spendForm(key, () => holder.replaceChildren(summary, edit))));
  holder.append(summary, edit);
  return holder;
}

function spendForm(key, close) {
  const id = `limit-${key.id}`;
  const credits = el('input', { type: 'number', id: `${id}-credits`, name: 'credits', min: '1', max: '1000000000', step: '1', required: '', value: key.spend_limit ? String(key.spend_limit.credits) : '' });
  const period = el(
    'select',
    { id: `${id}-period`, name: 'period' },
    el('option', { value: 'day', text: 'per UTC day' }),
    el('option', { value: 'month', text: 'per UTC month' }),
  );
  period.value = key.spend_limit?.period ?? 'day';
  const save = el('button', { type: 'submit', class: 'button primary small' }, 'Save limit');
  const form = el(
    'form',
    { class: 'form inline spend-form', 'aria-label': `Spend limit of key ${key.key_prefix}` },
    el('div', { class: 'field' }, el('label', { for: credits.id, text: 'Credits' }), credits),
    el('div', { class: 'field' }, el('label', { for: period.id, text: 'Period' }), period),
    save,
  );
  const setLimit = (limit, button, message) =>
    act(button, async () => {
      await api(`/api/keys/${encodeURIComponent(key.id)}`, { method: 'PATCH', body: { spend_limit: limit } });
      await load();
      notify(message, 'success');
    });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    setLimit({ credits: Number(credits.value), period: period.value }, save, `Key ${key.key_prefix} may now spend ${credits.value} credits per ${period.value}.`);
  });
  if (key.spend_limit) {
    const clear = el('button', { type: 'button', class: 'button danger small' }, 'Remove limit');
    clear.addEventListener('click', () => setLimit(null, clear, `Key ${key.key_prefix} has no spend limit any more.`));
    form.append(clear);
  }
  form.append(el('button', { type: 'button', class: 'button secondary small', onclick: close }, 'Cancel'));
  queueMicrotask(() => credits.focus());
  return form;
}

function actionButton(label, key, handler, tone = 'secondary') {
  return el('button', { type: 'button', class: `button small ${tone}`, 'aria-label': `${label} key ${key.key_prefix}`, onclick: handler }, label);
}

const reissue = (key) =>
  confirmedAction(
    {
      title: `Reissue ${key.key_prefix}?`,
      message: 'A new key replaces this one. This key stops working immediately, on every request; update your integration with the new key.',
      confirmLabel: 'Reissue key',
    },
    async () => {
      const created = await api(`/api/keys/${encodeURIComponent(key.id)}/reissue`, { method: 'POST' });
      await load();
      showNewKey(created.plaintext_key);
      notify(`Key ${key.key_prefix} was revoked and replaced by ${created.key.key_prefix}.`, 'success');
    },
  );

const revoke = (key) =>
  confirmedAction(
    {
      title: `Revoke ${key.key_prefix}?`,
      message: 'The key stops working immediately and cannot be restored. Requests using it will get "Invalid API key."',
      confirmLabel: 'Revoke key',
    },
    async () => {
      await api(`/api/keys/${encodeURIComponent(key.id)}/revoke`, { method: 'POST' });
      await load();
      notify(`Key ${key.key_prefix} revoked.`, 'success');
    },
  );

/**
 * Reissue makes a new key on the same grant, which the API refuses (422) once the grant has expired
 * or run out of quota: offer it only when it can work.
 */
function canReissue(key) {
  if (key.status !== 'active') return false;
  if (key.type !== 'trial') return true;
  return grants.find((g) => g.id === key.grant_id)?.usable === true;
}

function actions(key) {
  if (key.status === 'revoked') return el('span', { class: 'muted', text: '—' });
  const buttons = [];
  if (key.status === 'active') buttons.push(revealControl(key));
  if (canReissue(key)) buttons.push(actionButton('Reissue', key, reissue(key)));
  buttons.push(actionButton('Revoke', key, revoke(key), 'danger'));
  return el('div', { class: 'actions' }, buttons);
}

/** What an empty key list says: how to get a key of that type from here. */
function noKeys(type) {
  if (type === 'paid') return 'No paid keys yet. Create one with "Create paid key".';
  // The trial tab's own empty state (#no-grants) says it all: nothing more under it.
  if (grants.length === 0) return document.createDocumentFragment();
  return grants.some((g) => g.usable && !g.bound_key_id) ? 'No trial keys yet. Choose a trial grant above and create one.' : 'No trial keys yet.';
}

function keyTable(type, keys) {
  const byId = new Map(grants.map((g) => [g.id, g]));
  const columns = [
    { label: 'Key', render: (k) => el('code', { text: `${k.key_prefix}…` }) },
    { label: 'Status', render: (k) => badge(k.status) },
  ];
  if (type === 'trial') {
    columns.push({
      label: 'Grant',
      render: (k) => {
        const g = byId.get(k.grant_id);
        return el('span', {}, el('span', { class: 'mono', text: k.grant_id }), g ? el('span', { class: 'muted block', text: `${g.quota_remaining} of ${g.quota_total} left, expires ` }, time(g.expires_at)) : null);
      },
    });
  }
  columns.push(
    { label: 'Spend limit', render: spendControl },
    { label: 'Created', render: (k) => time(k.created_at) },
    { label: 'Last used', render: (k) => time(k.last_used_at) },
    { label: 'Actions', render: actions },
  );
  return table(columns, keys, { caption: `${type === 'paid' ? 'Paid' : 'Trial'} keys`, empty: noKeys(type), rowClass: (k) => `key-${k.status}` });
}

function grantChoices() {
  const select = document.getElementById('trial-grant');
  const usable = grants.filter((g) => g.usable && !g.bound_key_id);
  select.replaceChildren(...usable.map((g) => el('option', { value: g.id, text: grantLabel(g) })));
  document.getElementById('create-trial-form').hidden = usable.length === 0;
  // Why no trial key can be made: the account has no grant at all, or none that can take a key.
  document.getElementById('no-grant').hidden = usable.length > 0 || grants.length === 0;
  document.getElementById('no-grants').hidden = grants.length > 0;
}

async function load() {
  const [paid, trial, grantList] = await Promise.all([api('/api/keys?type=paid'), api('/api/keys?type=trial'), api('/api/trial-grants')]);
  grants = grantList.data;
  fill('paid-keys', keyTable('paid', paid.data));
  fill('trial-keys', keyTable('trial', trial.data));
  grantChoices();
}

function create(body, button) {
  return act(button, async () => {
    const created = await api('/api/keys', { method: 'POST', body });
    await load();
    showNewKey(created.plaintext_key);
    notify(`Key ${created.key.key_prefix} created.`, 'success');
  });
}

startPage(async () => {
  selectTab(location.hash === '#trial' ? 'trial' : 'paid');
  document.getElementById('create-paid').addEventListener('click', (event) => create({ type: 'paid' }, event.currentTarget));
  document.getElementById('create-trial-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const grantId = event.currentTarget.elements.grant_id.value;
    if (grantId) create({ type: 'trial', grant_id: grantId }, document.getElementById('create-trial'));
  });
  await load();
});
