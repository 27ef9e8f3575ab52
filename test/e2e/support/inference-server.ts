import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@taskapi/testing';

interface HeldRequest {
  publicId: string;
  body: Record<string, unknown>;
  res: http.ServerResponse;
}

/**
 * A stand-in for an external inference server (the `http` engine's peer) that holds every request
 * until the test answers it, so a test can act while a task is mid-run.
 */
export interface InferenceServer {
  url: string;
  requestsFor(publicId: string): HeldRequest[];
  waitForRequest(publicId: string, n: number): Promise<HeldRequest>;
  close(): Promise<void>;
}

export async function startInferenceServer(): Promise<InferenceServer> {
  const held: HeldRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
      held.push({ publicId: String(body.public_id), body, res });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const requestsFor = (publicId: string) => held.filter((h) => h.publicId === publicId);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requestsFor,
    waitForRequest: (publicId, n) =>
      waitFor(() => requestsFor(publicId)[n - 1], { timeoutMs: 30_000, intervalMs: 50, what: `inference request #${n} for ${publicId}` }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Answers a held request as a successful inference with one small file. */
export function answerWithVideo(req: HeldRequest): void {
  req.res.writeHead(200, { 'content-type': 'application/json' });
  req.res.end(
    JSON.stringify({
      result: { frames: 1 },
      files: [{ name: 'video.gif', content_type: 'image/gif', data_base64: Buffer.from('GIF89a').toString('base64') }],
    }),
  );
}
