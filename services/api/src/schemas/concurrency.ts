// The console's view of fair scheduling (`GET /api/console/concurrency`, docs/fair-scheduling.md):
// how many of the account's tasks run now, its cap, and what waits.
import { z } from 'zod';

const count = (description: string, example: number) => z.int().min(0).meta({ description, example });

export const concurrencySchema = z
  .object({
    running: count('Tasks running now, all kinds together (including any handed to a worker that has not started it yet).', 3),
    max_running: z.int().min(1).meta({ description: "The account's cap of running tasks: its own, or the service's default.", example: 10 }),
    waiting: count('Tasks queued for a worker, all kinds together.', 12),
    held_by_cap: count('Of those, tasks that wait only because the account is at its cap.', 5),
  })
  .meta({ id: 'Concurrency' });

export type ConcurrencyView = z.infer<typeof concurrencySchema>;

// `GET /api/console/fairness-keys`: the same inside the account, by kind and fairness key.
export const fairnessKeysSchema = z
  .object({
    data: z
      .array(
        z.object({
          kind: z.string().meta({ description: 'The task kind.', example: 'image-generation' }),
          fairness_key: z.string().nullable().meta({ description: "The tasks' `fairness_key`; `null` for those created without one.", example: 'user-42' }),
          waiting: count('Queued tasks of that kind and key.', 4),
          running: count('Running tasks of that kind and key.', 1),
        }),
      )
      .meta({ description: 'Every kind and key with tasks waiting or running, most waiting first.' }),
  })
  .meta({ id: 'FairnessKeyLoad' });
