import { z } from 'zod';
import { TASK_KINDS } from '@taskapi/domain';
const N = 100_000;
const mk = (i: number) => ({
  id: String(1000 + i), public_id: `task_${String(i).padStart(22, 'a')}`, kind: 'image-generation', status: i % 2 ? 20 : 0,
  error_code: null, input: '{"prompt":"a lighthouse at dusk"}', payload: i % 3 ? '{"order":123}' : null,
  callback_url: i % 2 ? 'https://example.com/hook' : null, cost: 10, created_at: new Date(),
  started_at: i % 2 ? new Date() : null, finished_at: i % 2 ? new Date() : null, result: i % 2 ? '{"url":"x"}' : null, files: '[]',
});
const rows = Array.from({ length: N }, (_, i) => mk(i));
const shape = (kind: z.ZodType) => z.object({
  id: z.string(), public_id: z.string(), kind, status: z.number(), error_code: z.string().nullable(), input: z.string(),
  payload: z.string().nullable(), callback_url: z.string().nullable(), cost: z.number(), created_at: z.date(),
  started_at: z.date().nullable(), finished_at: z.date().nullable(), result: z.string().nullable(), files: z.string(),
});
const a = shape(z.enum(['video-generation', 'image-generation', 'face-detection']));
const b = shape(z.enum(TASK_KINDS));
const c = shape(z.string());
function time(label: string, s: z.ZodType) {
  let sink = 0;
  const fn = () => { for (const r of rows) { const p = s.safeParse(r); if (p.success) sink++; } };
  for (let r = 0; r < 3; r++) fn();
  const runs: number[] = [];
  for (let r = 0; r < 9; r++) { const t = process.hrtime.bigint(); fn(); runs.push(Number(process.hrtime.bigint() - t) / 1e6); }
  runs.sort((x, y) => x - y);
  console.log(`${label}: ${(runs[4]! * 1000 / N).toFixed(3)} µs/row`, sink > 0);
}
time('enum literal tuple', a); time('enum TASK_KINDS', b); time('string kind', c);
console.log(TASK_KINDS, Object.isFrozen(TASK_KINDS));
