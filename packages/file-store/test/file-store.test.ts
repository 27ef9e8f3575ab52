import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { freePort, startSwift, type SwiftServer } from '@taskapi/testing';
import { createFsStore, StorageUnavailableError, type FileStore } from '../src';
import { createS3Store } from '../src/s3-store';

const bytesOf = async (store: FileStore, key: string, range?: { start: number; end: number }) => {
  const object = await store.get(key, range);
  return object && { size: object.size, data: Buffer.concat(await object.body.toArray()) };
};

let swift: SwiftServer;
const fsRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-fs-store-'));
const bucket = `store-test-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  swift = await startSwift();
  await swift.createBucket(bucket);
}, 90_000);
afterAll(async () => {
  await swift?.stop();
  fs.rmSync(fsRoot, { recursive: true, force: true });
});

describe.each([
  ['fs', () => createFsStore(fsRoot)],
  ['s3 (Swift)', () => createS3Store(swift.storeOptions(bucket))],
])('%s driver', (_driver, makeStore) => {
  let store: FileStore;
  beforeAll(() => {
    store = makeStore();
  });

  it('is writable', async () => {
    await expect(store.checkWritable()).resolves.toBeUndefined();
  });

  it('puts from a buffer and from a stream; gets the bytes, their size and a byte range', async () => {
    const big = randomBytes(3 * 1024 * 1024 + 17);
    await store.put('task_a/video.mp4', { stream: Readable.from([big.subarray(0, 1000), big.subarray(1000)]), size: big.length }, 'video/mp4');
    await store.put('task_a/image.png', Buffer.from('png bytes'), 'image/png');

    expect(await bytesOf(store, 'task_a/image.png')).toEqual({ size: 9, data: Buffer.from('png bytes') });
    const whole = await bytesOf(store, 'task_a/video.mp4');
    expect(whole?.size).toBe(big.length);
    expect(whole?.data.equals(big)).toBe(true);
    const part = await bytesOf(store, 'task_a/video.mp4', { start: 100, end: 199 });
    expect(part?.size).toBe(big.length);
    expect(part?.data.equals(big.subarray(100, 200))).toBe(true);

    expect(await store.head('task_a/video.mp4')).toMatchObject({ size: big.length });
    expect(await store.head('task_a/missing')).toBeNull();
    expect(await store.get('task_a/missing')).toBeNull();
  });

  it('overwrites atomically and deletes many (missing keys are fine)', async () => {
    await store.put('task_b/out.txt', Buffer.from('first'), 'text/plain');
    await store.put('task_b/out.txt', Buffer.from('second'), 'text/plain');
    await store.put('inputs/task_b/image', Buffer.from('img'), 'image/png');
    expect((await bytesOf(store, 'task_b/out.txt'))?.data.toString()).toBe('second');
    await store.deleteMany(['task_b/out.txt', 'inputs/task_b/image', 'task_b/never-written']);
    expect(await store.head('task_b/out.txt')).toBeNull();
    expect(await store.head('inputs/task_b/image')).toBeNull();
  });

  it('lists a folder in pages, with when each object was written; an empty or missing folder lists nothing', async () => {
    const before = Date.now() - 5_000;
    const keys = Array.from({ length: 7 }, (_, i) => `predictions/task_l${i % 3}/pred-${i}.json`);
    for (const key of keys) await store.put(key, Buffer.from('{}'), 'application/json');
    await store.put('task_l0/image.png', Buffer.from('not listed'), 'image/png');
    const listed = [];
    for await (const page of store.list('predictions/')) listed.push(...page);
    expect(listed.map((o) => o.key).sort()).toEqual([...keys].sort());
    for (const o of listed) expect(o.lastModified.getTime()).toBeGreaterThan(before);
    const empty = [];
    for await (const page of store.list('nothing-here/')) empty.push(...page);
    expect(empty).toEqual([]);
    await store.deleteMany(keys);
  });

  it('refuses keys that could leave the store', async () => {
    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', '.hidden/x', '']) {
      await expect(store.put(key, Buffer.from('x'), 'text/plain')).rejects.toThrow('unsafe file-store key');
    }
  });
});

describe('s3 driver failures', () => {
  it('a missing bucket: checkWritable says so clearly', async () => {
    const store = createS3Store(swift.storeOptions('no-such-bucket-here'));
    const err = await store.checkWritable().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageUnavailableError);
    expect((err as Error).message).toBe('bucket "no-such-bucket-here" does not exist (the operator creates it before starting the services)');
  });

  it('wrong credentials: access denied, without the secret in the message', async () => {
    const store = createS3Store({ ...swift.storeOptions(bucket), credentials: { accessKeyId: 'test:tester', secretAccessKey: 'wrong-secret' } });
    const err = await store.checkWritable().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageUnavailableError);
    expect((err as Error).message).toMatch(/^access to bucket "store-test-[0-9a-f]+" denied/);
    expect((err as Error).message).not.toContain('wrong-secret');
  });

  it('an unreachable endpoint: every operation throws StorageUnavailableError quickly', async () => {
    const store = createS3Store({ ...swift.storeOptions(bucket), endpoint: `http://127.0.0.1:${await freePort()}` });
    const started = Date.now();
    await expect(store.get('task_a/image.png')).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.put('task_a/x', Buffer.from('x'), 'text/plain')).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.checkWritable()).rejects.toThrow(/^bucket "store-test-[0-9a-f]+" unreachable: /);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('fs driver failures', () => {
  it('a directory that cannot be written: checkWritable fails clearly', async () => {
    const file = path.join(fsRoot, 'not-a-directory');
    fs.writeFileSync(file, 'x');
    await expect(createFsStore(path.join(file, 'files')).checkWritable()).rejects.toThrow(/^file store directory: write to .*not-a-directory\/files failed: /);
  });
});
