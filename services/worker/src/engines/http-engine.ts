import { request } from 'undici';
import { z } from 'zod';
import type { Engine, EngineFile } from './engine';
import { safeSentence } from '../domain/failure-message';
import { EngineError, TaskInputError } from './engine';

/** Largest response accepted from the inference server (files travel base64-encoded inside it). */
const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

const responseSchema = z.object({
  result: z.unknown().optional(),
  files: z
    .array(
      z.object({
        name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/),
        content_type: z.string().min(1).max(200),
        data_base64: z.string(),
      }),
    )
    .max(20)
    .optional(),
});

/**
 * Forwards a task to an external inference server (where GPU models live). Contract:
 *
 * `POST <HTTP_ENGINE_URL>/v1/tasks/<kind>` with `Authorization: Bearer <HTTP_ENGINE_TOKEN>` (when
 * set) and JSON `{"public_id","kind","params","image":{"content_type","data_base64"}|null}`.
 * Answers: `200 {"result"?: any, "files"?: [{"name","content_type","data_base64"}]}`;
 * `422 {"message"}` when the input can never work (task fails with `invalid_input`);
 * other 4xx fail the task with `engine_error`; 5xx and network errors are retried.
 * The request is aborted at the kind's timeout.
 */
export function createHttpEngine(opts: { url: string; token: string | undefined }): Engine {
  return {
    async run(input, signal) {
      const body = JSON.stringify({
        public_id: input.publicId,
        kind: input.kind,
        params: input.params,
        image: input.image ? { content_type: input.image.contentType, data_base64: input.image.data.toString('base64') } : null,
      });
      let res;
      try {
        res = await request(`${opts.url}/v1/tasks/${input.kind}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          },
          body,
          signal,
        });
      } catch (err) {
        if (signal.aborted) throw signal.reason as Error;
        throw new EngineError(`inference server unreachable: ${(err as Error).message}`, true, 'The engine could not be reached. Please try again later.');
      }
      const text = await readCapped(res.body, signal);
      if (res.statusCode === 422) {
        const message = safeMessage(text) ?? 'the inference server rejected the input';
        throw new TaskInputError(message);
      }
      if (res.statusCode >= 500) {
        throw new EngineError(`inference server answered ${res.statusCode}`, true, `The engine failed (HTTP ${res.statusCode}). Please try again later.`);
      }
      if (res.statusCode !== 200) {
        // The engine's own words only when they are a short, harmless sentence (safeSentence).
        const reason = safeSentence(safeMessage(text));
        const publicMessage = `The engine refused the task (HTTP ${res.statusCode})${reason ? `: ${reason}` : '.'}`;
        throw new EngineError(`inference server answered ${res.statusCode}`, false, publicMessage);
      }
      let parsed;
      try {
        parsed = responseSchema.parse(JSON.parse(text));
      } catch {
        throw new EngineError('inference server sent an invalid response', false, 'The engine sent an invalid response.');
      }
      const files: EngineFile[] = (parsed.files ?? []).map((f) => ({
        name: f.name,
        contentType: f.content_type,
        data: Buffer.from(f.data_base64, 'base64'),
      }));
      return { result: parsed.result, files };
    },
  };
}

async function readCapped(body: AsyncIterable<unknown> & { destroy(): void }, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > MAX_RESPONSE_BYTES) {
        body.destroy();
        throw new EngineError('inference server response too large', false, 'The engine sent a response larger than the worker accepts.');
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof EngineError) throw err;
    if (signal.aborted) throw signal.reason as Error;
    throw new EngineError(`inference server connection failed: ${(err as Error).message}`, true, 'The connection to the engine failed. Please try again later.');
  }
  return Buffer.concat(chunks).toString('utf8');
}

function safeMessage(text: string): string | undefined {
  try {
    const m = (JSON.parse(text) as { message?: unknown }).message;
    return typeof m === 'string' ? m.slice(0, 500) : undefined;
  } catch {
    return undefined;
  }
}
