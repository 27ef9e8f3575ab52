// Task API quickstart in Node.js (>= 20) with the SDK: create an image, wait for it, download it.
//
//   npm install @taskapi/client
//   export TASKAPI_BASE_URL=https://api.example.com
//   export TASKAPI_API_KEY=sk-test-...                      # console → API keys
//   export TASKAPI_CALLBACK_URL=https://you.example/hooks   # optional: your webhook receiver
//   node quickstart.mjs
//
// Verify a notification your receiver got (raw body on stdin, its X-Signature and Standard Webhooks
// headers as arguments):
//   export TASKAPI_WEBHOOK_SECRET=whsec_...                 # console → Webhook
//   node quickstart.mjs verify "$X_SIGNATURE" "$WEBHOOK_ID" "$WEBHOOK_TIMESTAMP" "$WEBHOOK_SIGNATURE" < body.json
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TaskApi, TaskApiError, verifyWebhook, WebhookVerificationError } from '@taskapi/client';

if (process.argv[2] === 'verify') {
  // In your receiver: the raw body bytes as received (before any JSON parsing) and the request's headers.
  const rawBody = readFileSync(0);
  const [signature, id, timestamp, standardSignature] = process.argv.slice(3);
  const headers = { 'x-signature': signature, 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': standardSignature };
  try {
    // The Standard Webhooks headers sign a timestamp: required, they stop replays of old deliveries.
    await verifyWebhook(rawBody, headers, process.env.TASKAPI_WEBHOOK_SECRET, { requireStandardWebhooks: true });
    console.log('webhook verified');
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    console.error(`webhook rejected: ${err.message}`);
    process.exit(1);
  }
} else {
  const api = new TaskApi({ apiKey: process.env.TASKAPI_API_KEY, baseUrl: process.env.TASKAPI_BASE_URL });
  try {
    // 1. Create the task; the SDK sends an Idempotency-Key, so its own retries never charge twice.
    const task = await api.tasks.create('image-generation', {
      prompt: 'a lighthouse at dawn',
      width: 256,
      height: 256,
      payload: { order_id: 'A-1001' },
      ...(process.env.TASKAPI_CALLBACK_URL ? { callback_url: process.env.TASKAPI_CALLBACK_URL } : {}),
    });
    console.log(`created ${task.public_id}`);

    // 2. Wait until it is terminal (long-polls with Prefer: wait=50, under common proxies' 60 s timeout).
    //    To watch it live instead: for await (const t of api.tasks.events(task.public_id)) console.log(t.status, t.progress);
    //    To let a web page watch it without the key: const { token } = await api.tasks.createReadToken(task.public_id);
    //    then, in the page, watchTask(baseUrl, task.public_id, token) from '@taskapi/client/browser'.
    const done = await api.tasks.wait(task.public_id, { timeoutMs: 300_000 });
    console.log(`finished ${done.public_id} with status ${done.status}`);
    if (done.status !== 20) throw new Error(`failed: ${done.error_code}: ${done.error_message}`);

    // 3. Download the result through its signed URL.
    const bytes = await api.files.download(done.files[0]);
    const out = path.join(process.env.TASKAPI_OUTPUT_DIR ?? '.', done.files[0].name);
    writeFileSync(out, bytes);
    console.log(`saved ${out} (${bytes.length} bytes)`);
  } catch (err) {
    // The API's own message, verbatim, with the status and the request id to quote to support.
    if (err instanceof TaskApiError) console.error(`${err.status} ${err.message} (request ${err.requestId})`);
    else console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
