// The transition writer's rules, on their own: steps in STORE_ORDER whatever order they are given
// in, the database step's result handed to the rest, a failure after the commit logged (naming who
// repairs it) while the next steps still run, a database failure thrown before anything else, and
// outages waited out until the signal aborts.
import { createLogger } from '@taskapi/logger';
import { StoppedWhileUnavailableError } from '@taskapi/service';
import { STORE_ORDER, TransitionWriter, type StoreName } from '../src';

function writer() {
  const warnings: Array<{ message: string; meta: unknown }> = [];
  const logger = createLogger({ service: 'transition-test', level: 'silent' });
  logger.warn = ((message: string, meta: unknown) => {
    warnings.push({ message, meta });
    return logger;
  }) as typeof logger.warn;
  return { writer: new TransitionWriter(logger), warnings };
}

const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

it('writes the stores in STORE_ORDER and hands each the commit', async () => {
  const { writer: w } = writer();
  const order: StoreName[] = [];
  const step = (store: StoreName) => async (committed: string) => {
    expect(committed).toBe('row');
    order.push(store);
  };
  const result = await w.run('test', 'task_x', {
    predictions: step('predictions'),
    webhooks: step('webhooks'),
    scheduler: step('scheduler'),
    markers: step('markers'),
    database: async () => {
      order.push('database');
      return 'row';
    },
  });
  expect(result).toBe('row');
  expect(order).toEqual([...STORE_ORDER]);
});

it("a run's terminal end writes the scheduler beside the markers, and the webhook job after both", async () => {
  const { writer: w } = writer();
  const events: string[] = [];
  let markersDone!: () => void;
  const markersWritten = new Promise<void>((resolve) => (markersDone = resolve));
  const run = w.run(
    'complete',
    'task_x',
    {
      database: async () => 'row',
      markers: async () => {
        events.push('markers started');
        await markersWritten;
        events.push('markers written');
      },
      scheduler: async () => {
        events.push('scheduler started');
        markersDone();
      },
      webhooks: async () => void events.push('webhooks'),
    },
    { schedulerBesideMarkers: true },
  );
  await run;
  // The scheduler's step started while the markers' was still open; the webhook job waited for both.
  expect(events).toEqual(['markers started', 'scheduler started', 'markers written', 'webhooks']);
});

it('a failing write after the commit is logged with its repair, and the later writes still happen', async () => {
  const { writer: w, warnings } = writer();
  const written: string[] = [];
  await w.run('complete', 'task_x', {
    database: async () => 1,
    markers: async () => {
      throw new Error('boom');
    },
    scheduler: async () => void written.push('scheduler'),
    webhooks: async () => void written.push('webhooks'),
  });
  expect(written).toEqual(['scheduler', 'webhooks']);
  expect(warnings).toEqual([{ message: 'complete: markers not written; readers go to PostgreSQL within 5 s', meta: { public_id: 'task_x', error: 'boom' } }]);
});

it('a failing database step is thrown and nothing after it is written', async () => {
  const { writer: w } = writer();
  const written: string[] = [];
  await expect(
    w.run('cancel', 'task_x', {
      database: async () => {
        throw new Error('refused');
      },
      markers: async () => void written.push('markers'),
    }),
  ).rejects.toThrow('refused');
  expect(written).toEqual([]);
});

it('with a signal, outages are waited out at every step; once it aborts, the database step gives up', async () => {
  const { writer: w, warnings } = writer();
  let databaseTries = 0;
  let markerTries = 0;
  const signal = new AbortController();
  const result = await w.run(
    'complete',
    'task_x',
    {
      database: async () => {
        if (++databaseTries < 3) throw outage();
        return 'row';
      },
      markers: async () => {
        if (++markerTries < 2) throw Object.assign(new Error('Connection is closed.'), {});
      },
    },
    { waitWhileUnavailable: signal.signal },
  );
  expect(result).toBe('row');
  expect([databaseTries, markerTries]).toEqual([3, 2]);
  expect(warnings.map((w) => w.message)).toEqual(['complete: waiting for a store to answer', 'complete: waiting for a store to answer']);

  setTimeout(() => signal.abort(), 100);
  await expect(w.run('complete', 'task_y', { database: () => Promise.reject(outage()) }, { waitWhileUnavailable: signal.signal })).rejects.toBeInstanceOf(StoppedWhileUnavailableError);
});
