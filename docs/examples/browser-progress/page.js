// The page an integrator serves (docs/api.md, "Browser read tokens"). It never holds an API key and
// mints nothing: its own server creates the task and hands it a read token for that one task; the
// page follows the task straight from the Task API, with the SDK's browser entry.
import { watchTask } from '/taskapi-browser.mjs';

const $ = (id) => document.getElementById(id);

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
}

$('generate').addEventListener('submit', async (event) => {
  event.preventDefault();
  $('error').hidden = true;
  $('result').hidden = true;
  $('task').hidden = false;
  $('bar').value = 0;
  $('status').textContent = 'Queued…';
  // Our server: creates the task with its API key and mints the token.
  const res = await fetch('/generate', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: $('prompt').value }) });
  if (!res.ok) return showError(`Could not start the task: ${(await res.json()).message}`);
  const { task_id: id, token, api_base: apiBase } = await res.json();
  try {
    for await (const task of watchTask(apiBase, id, token, { maxReconnects: 2 })) {
      $('bar').value = task.status === 20 ? 1 : (task.progress ?? 0);
      $('bar').textContent = `${Math.round($('bar').value * 100)} %`;
      $('status').textContent = task.status === 0 ? 'Queued…' : task.status === 10 ? `Generating… ${Math.round((task.progress ?? 0) * 100)} %` : task.status === 20 ? 'Done.' : 'Stopped.';
      if (task.status === 20 && task.files[0]) {
        // A signed link of the API's own: an <img> needs no token and no CORS.
        $('result').src = task.files[0].url;
        $('result').hidden = false;
      }
      if (task.status === 30) showError(`The task failed: ${task.error_message}`);
    }
  } catch (err) {
    showError(`Could not follow the task: ${err.message}`);
  }
});
