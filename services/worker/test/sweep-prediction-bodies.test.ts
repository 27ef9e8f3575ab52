// Model webhook bodies the API stored in the file store but no prediction record lists (the API
// stopped between storing and recording one) are swept once they are older than the grace period;
// a body a task's current prediction lists, and a young one, stay. Real Redis, a real file store.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { claimPrediction, predictionId, recordPredictionUpdate } from '@taskapi/domain';
import { createFsStore } from '@taskapi/file-store';
import { startPrivateRedis, type PrivateRedis } from '@taskapi/testing';
import { PREDICTION_BODY_GRACE_MS, sweepPredictionBodies } from '../src/domain/sweep-prediction-bodies';

let server: PrivateRedis;
let redis: Redis;
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-bodies-'));
const store = createFsStore(root);

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Stores a body as the API does, written `ageMs` ago. */
async function body(key: string, ageMs: number): Promise<void> {
  await store.put(key, Buffer.from('{"status":"succeeded"}'), 'application/json');
  const when = new Date(Date.now() - ageMs);
  fs.utimesSync(path.join(root, ...key.split('/')), when, when);
}

it('deletes old bodies no record lists, and keeps listed and young ones', async () => {
  const running = 'task_sweepbodiesrunning0001';
  const id = predictionId(running, 1);
  await claimPrediction(redis, running, id, 'video-generation');
  const listed = `predictions/${running}/${id}-aaaaaa.json`;
  await body(listed, 2 * PREDICTION_BODY_GRACE_MS);
  expect(await recordPredictionUpdate(redis, running, { predictionId: id, status: '', progress: null, payload: null, ref: listed })).toBe(true);
  const straySameTask = `predictions/${running}/${id}-bbbbbb.json`;
  await body(straySameTask, 2 * PREDICTION_BODY_GRACE_MS);
  const strayEndedTask = 'predictions/task_sweepbodiesended00000001/task_sweepbodiesended00000001-1-cccccc.json';
  await body(strayEndedTask, 2 * PREDICTION_BODY_GRACE_MS);
  const young = 'predictions/task_sweepbodiesyoung00000001/task_sweepbodiesyoung00000001-1-dddddd.json';
  await body(young, 60_000);

  expect(await sweepPredictionBodies({ store, redis })).toBe(2);
  expect(await store.head(straySameTask)).toBeNull();
  expect(await store.head(strayEndedTask)).toBeNull();
  expect(await store.head(listed)).not.toBeNull();
  expect(await store.head(young)).not.toBeNull();
  // Nothing else to do on the next run.
  expect(await sweepPredictionBodies({ store, redis })).toBe(0);
});
