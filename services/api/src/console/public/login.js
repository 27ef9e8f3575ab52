// The login page: posts e-mail and password; the server answers with an HttpOnly session cookie,
// so no token is ever handled (or stored) by this script.
import { act, api, ApiError } from './common.js';

/** Where to go after logging in: the `next` parameter if it is a console page, else the dashboard. */
function destination() {
  const next = new URLSearchParams(location.search).get('next');
  if (!next || !/^\/app(?:[/?#]|$)/.test(next)) return '/app';
  const url = new URL(next, location.origin);
  return url.origin === location.origin && url.pathname !== '/app/login' ? url.pathname + url.search + url.hash : '/app';
}

async function alreadyLoggedIn() {
  const res = await fetch('/api/auth/session', { credentials: 'same-origin' });
  return res.ok;
}

const form = document.getElementById('login-form');
const error = document.getElementById('login-error');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  error.textContent = '';
  const email = form.elements.email.value.trim();
  const password = form.elements.password.value;
  if (!email || !password) {
    error.textContent = 'Enter your e-mail and password.';
    (email ? form.elements.password : form.elements.email).focus();
    return;
  }
  await act(document.getElementById('login-submit'), async () => {
    try {
      await api('/api/auth/login', { method: 'POST', body: { email, password } });
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.message : 'Could not log in.';
      form.elements.password.select();
      form.elements.password.focus();
      return;
    }
    location.replace(destination());
  });
});

alreadyLoggedIn().then(
  (yes) => {
    if (yes) location.replace(destination());
    else form.elements.email.focus();
  },
  () => form.elements.email.focus(),
);
