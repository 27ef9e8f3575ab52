// A stand-in for an external inference server (the `http` engine's peer) that answers at once,
// so video tasks cost no CPU, and lets the load choose each task's fate through its prompt:
// "…[fail]" is rejected with 422 (the task fails with invalid_input and is refunded), "…[flaky]"
// gets a 503 on its first request (the worker retries it) and succeeds on the next. Answers take
// 100-800 ms, as a model would, so a killed worker leaves tasks mid-run.
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';

export const FAIL_MARK = '[fail]';
export const FLAKY_MARK = '[flaky]';

const TINY_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export interface InferenceStub {
  url: string;
  close(): Promise<void>;
}

export async function startInferenceStub(): Promise<InferenceStub> {
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      await delay(100 + Math.random() * 700);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { public_id: string; params?: { prompt?: string } };
      const prompt = body.params?.prompt ?? '';
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (prompt.includes(FAIL_MARK)) return answer(422, { message: 'the chaos run asked for this task to fail' });
      if (prompt.includes(FLAKY_MARK) && !seen.has(body.public_id)) {
        seen.add(body.public_id);
        return answer(503, { message: 'warming up' });
      }
      answer(200, {
        result: { frames: 1 },
        files: [{ name: 'video.gif', content_type: 'image/gif', data_base64: TINY_GIF.toString('base64') }],
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
