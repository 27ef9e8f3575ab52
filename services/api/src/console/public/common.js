// Shared by every console page: the JSON API client, the session guard, DOM helpers, notices and
// the confirm dialog. Customer data only ever reaches the page through textContent (never innerHTML).

/** An error response of the API: its status and `message`. */
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

const LOGIN_PATH = '/app/login';

/** Back to the login page, remembering where we were (a path only: never a secret). */
export function goToLogin() {
  const here = location.pathname + location.search + location.hash;
  location.replace(`${LOGIN_PATH}?next=${encodeURIComponent(here)}`);
}

/**
 * Calls the console JSON API with the session cookie. A 401 means the session is missing, expired or
 * logged out: go to the login page (the returned promise then never settles).
 */
export async function api(path, { method = 'GET', body } = {}) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'The server could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (res.status === 401 && path !== '/api/auth/login') {
    goToLogin();
    return new Promise(() => {});
  }
  if (!res.ok) {
    const message = data && typeof data.message === 'string' ? data.message : `Request failed (HTTP ${res.status}).`;
    throw new ApiError(res.status, message, data);
  }
  return data;
}

/**
 * Downloads `path` of the console API as a file, asking for `accept` (CSV): saved under the name its
 * `Content-Disposition` gives. Errors and a lost session as in `api`.
 */
export async function download(path, accept) {
  let res;
  try {
    res = await fetch(path, { credentials: 'same-origin', headers: { accept } });
  } catch {
    throw new ApiError(0, 'The server could not be reached. Check your connection and try again.');
  }
  if (res.status === 401) {
    goToLogin();
    return new Promise(() => {});
  }
  if (!res.ok) {
    const data = await res.json().catch(() => undefined);
    throw new ApiError(res.status, data && typeof data.message === 'string' ? data.message : `Request failed (HTTP ${res.status}).`, data);
  }
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'download';
  const url = URL.createObjectURL(await res.blob());
  const link = el('a', { href: url, download: name, hidden: '' });
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has handed the blob to the download.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * Builds an element. `attrs`: attributes and a few properties (`class`, `text`, `dataset`, `on<event>`);
 * children: nodes or strings (added as text).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else if (name === 'dataset') Object.assign(node.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Builds an SVG element (charts, face boxes, latency bars): attributes set as attributes, never a
 * `style` string (CSP style-src 'self'); `text` sets the text; children are nodes or strings.
 */
export function svgEl(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces the children of the element with id `id`. */
export function fill(id, ...children) {
  const target = document.getElementById(id);
  target.replaceChildren(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  target.removeAttribute('aria-busy');
  return target;
}

/**
 * A table that turns into labelled blocks on narrow screens. `columns`: `{label, render(row)}` where
 * render returns a node or text. `empty`: what to show instead when there are no rows — text, or a
 * node when the empty state offers a way out (such as "Clear filters").
 */
export function table(columns, rows, { caption, empty = 'Nothing here yet.', rowClass } = {}) {
  if (rows.length === 0) return typeof empty === 'string' ? emptyState(empty) : empty;
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { class: 'data' },
      caption ? el('caption', { class: 'visually-hidden', text: caption }) : null,
      el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col', text: c.label })))),
      el(
        'tbody',
        {},
        rows.map((row) =>
          el('tr', { class: rowClass ? rowClass(row) : undefined }, columns.map((c) => el('td', { dataset: { label: c.label } }, c.render(row)))),
        ),
      ),
    ),
  );
}

/** The "nothing to show" message of a list, with optional controls (a button that clears a filter). */
export function emptyState(text, ...controls) {
  return el('div', { class: 'empty' }, el('p', { class: 'muted', text }), controls.length ? el('div', { class: 'actions' }, controls) : null);
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A `<time>` element for an ISO timestamp, or a dash. */
export function time(iso) {
  if (!iso) return el('span', { class: 'muted', text: '—' });
  return el('time', { datetime: iso, title: iso, text: dateFormat.format(new Date(iso)) });
}

export const TASK_STATUS = { 0: 'queued', 10: 'processing', 20: 'completed', 30: 'failed', 40: 'cancelled' };

/** A status badge: task statuses (numbers) and key/delivery states (strings). */
export function badge(status) {
  const label = typeof status === 'number' ? (TASK_STATUS[status] ?? String(status)) : status;
  return el('span', { class: `badge badge-${label}`, text: label });
}

/** Shows a short message in the page's live region (announced to screen readers). */
export function notify(message, kind = 'info') {
  const box = document.getElementById('notice');
  box.hidden = false;
  box.className = `notice notice-${kind}`;
  box.textContent = message;
}

export function clearNotice() {
  const box = document.getElementById('notice');
  box.hidden = true;
  box.textContent = '';
}

/** Shows an error: its message from the API, or a generic one. */
export function notifyError(err) {
  notify(err instanceof ApiError || err instanceof Error ? err.message : 'Something went wrong.', 'error');
}

/**
 * The accessible confirm dialog (`<dialog>` in the layout): resolves true when confirmed. Escape and
 * Cancel resolve false. Focus starts on Cancel, so a stray Enter never confirms something destructive.
 */
function confirmDialog({ title, message, confirmLabel = 'Confirm' }) {
  const dialog = document.getElementById('confirm-dialog');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = message;
  document.getElementById('confirm-ok').textContent = confirmLabel;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'confirm'), { once: true });
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

/** Copies text to the clipboard and says so; falls back to selecting `selectTarget` for Ctrl+C. */
export async function copyText(text, selectTarget) {
  try {
    await navigator.clipboard.writeText(text);
    notify('Copied to the clipboard.', 'success');
  } catch {
    if (selectTarget) {
      const range = document.createRange();
      range.selectNodeContents(selectTarget);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    notify('Could not copy automatically: the text is selected, press Ctrl+C (⌘C) to copy it.', 'error');
  }
}

/**
 * Runs a button's action: the button is disabled meanwhile (a double click does not act twice) and
 * an error (the API's message) is shown as a notice.
 */
export async function act(button, work) {
  button.disabled = true;
  try {
    await work();
  } catch (err) {
    notifyError(err);
  } finally {
    button.disabled = false;
  }
}

/** A click handler for a consequential action: the confirm dialog first, then `act`. */
export function confirmedAction(dialog, work) {
  return async (event) => {
    const button = event.currentTarget; // null once the handler has awaited anything
    if (await confirmDialog(dialog)) await act(button, work);
  };
}

/**
 * Every logged-in page starts here: checks the session (401 → login page), shows who is logged in,
 * wires logout, sends the page to the login page when the session expires, then runs `render`.
 */
export async function startPage(render) {
  let session;
  try {
    session = await api('/api/auth/session');
  } catch (err) {
    notifyError(err);
    return;
  }
  document.getElementById('account-email').textContent = session.email;
  document.getElementById('logout').addEventListener('click', (event) =>
    act(event.currentTarget, async () => {
      await api('/api/auth/logout', { method: 'POST' });
      location.replace(LOGIN_PATH);
    }),
  );
  const remaining = new Date(session.expires_at).getTime() - Date.now();
  // setTimeout takes at most 2^31-1 ms; a session is 12 hours.
  setTimeout(goToLogin, Math.min(Math.max(remaining, 0) + 1000, 2 ** 31 - 1));
  try {
    await render(session);
  } catch (err) {
    notifyError(err);
  }
}
