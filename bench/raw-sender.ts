// The dispatcher's baseline, run as its own process like the dispatcher: the same webhooks (same
// bodies, same receiver, same concurrency) sent by a bare loop — sign (the same two HMACs as the
// dispatcher: X-Signature and webhook-signature) and POST through one undici Agent with keep-alive
// — with no queue, no database and no bookkeeping. Driven over IPC by bench/dispatcher-figures.ts.
import { Agent, request } from 'undici';
import { webhookHeaders } from '@taskapi/domain';

export interface RawSendOrder {
  ca: string;
  secret: string;
  concurrency: number;
  webhooks: Array<{ url: string; deliveryId: string; body: string }>;
}

let agent: Agent | undefined;
let order: RawSendOrder | undefined;

async function send(o: RawSendOrder): Promise<number> {
  agent ??= new Agent({ connect: { ca: o.ca }, keepAliveTimeout: 4_000 });
  let next = 0;
  let failures = 0;
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (next < o.webhooks.length) {
        const w = o.webhooks[next++]!;
        const headers = webhookHeaders({ deliveryId: w.deliveryId, attempt: 1, secret: o.secret, body: w.body, now: new Date() });
        const res = await request(w.url, { dispatcher: agent, method: 'POST', headers, body: w.body, headersTimeout: 10_000, bodyTimeout: 10_000 });
        await res.body.arrayBuffer();
        if (res.statusCode < 200 || res.statusCode > 299) failures++;
      }
    }),
  );
  return failures;
}

process.on('message', (msg: { order?: RawSendOrder; go?: true; exit?: true }) => {
  if (msg.order) {
    order = msg.order;
    process.send?.({ ready: true });
  } else if (msg.go && order) {
    void send(order).then(
      (failures) => process.send?.({ done: true, failures }),
      (err: unknown) => process.send?.({ done: true, error: (err as Error).message }),
    );
  } else if (msg.exit) {
    void (agent?.close() ?? Promise.resolve()).then(() => process.exit(0));
  }
});
process.send?.({ started: true });
