// The customers' webhook endpoint: the suite's HTTPS receiver (a certificate from the throwaway
// test CA, which the services trust through NODE_EXTRA_CA_CERTS). It refuses a share of requests
// with 500, as real receivers sometimes do, so retries happen alongside the chaos, and takes up to
// 300 ms to answer, so a killed dispatcher leaves attempts in flight.
import { setTimeout as delay } from 'node:timers/promises';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '@taskapi/testing';
import type { Random } from './random';

export const HOOK_PATH = '/hooks';

export interface WebhookSink {
  url: string;
  /** Requests answered 2xx: deliveries the customer accepted. */
  accepted(): ReceivedRequest[];
  /** Requests answered 500 on purpose. */
  refused(): number;
  close(): Promise<void>;
}

export async function startWebhookSink(random: Random, refuseShare = 0.05): Promise<WebhookSink> {
  const answered = new Map<ReceivedRequest, number>();
  const receiver: HttpsReceiver = await startHttpsReceiver(async (req) => {
    const status = random.chance(refuseShare) ? 500 : 204;
    answered.set(req, status);
    await delay(Math.random() * 300);
    return status;
  });
  return {
    url: receiver.url(HOOK_PATH),
    accepted: () => receiver.at(HOOK_PATH).filter((r) => (answered.get(r) ?? 0) < 300),
    refused: () => [...answered.values()].filter((s) => s >= 500).length,
    close: () => receiver.close(),
  };
}
