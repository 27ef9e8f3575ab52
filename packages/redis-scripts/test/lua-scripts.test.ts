// The loader and the typed layer against a real redis-server: includes inlined once, the key count
// from the file name (or passed by the caller), named replies, and a command that still runs after
// Redis lost its script cache (a restart or a failover: NOSCRIPT, then EVAL).
import path from 'node:path';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { startPrivateRedis, type PrivateRedis } from '@taskapi/testing';
import { commandsFolder, jsonReply, loadLuaCommands, LuaScripts, luaList } from '../src';

const FIXTURES = path.join(__dirname, 'fixtures/commands');
let server: PrivateRedis;
let redis: Redis;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

const scripts = new LuaScripts(FIXTURES, 'fixture');
const bumpAndRead = scripts.define({
  command: 'bump-and-read',
  keys: (i: { counter: string; by: number }) => [i.counter],
  args: (i) => [i.by],
  reply: jsonReply(z.object({ value: z.number(), now: z.number(), list: luaList(z.number()) })),
});
const sumKeys = scripts.define({ command: 'sum-keys', keys: (counters: string[]) => counters, args: () => [], reply: (raw) => Number(raw) });

test('a command is read once with its includes inlined, each include once, and its key count from its name', () => {
  const commands = loadLuaCommands(FIXTURES);
  expect([...commands.keys()].sort()).toEqual(['bump-and-read', 'sum-keys']);
  const bump = commands.get('bump-and-read')!;
  expect(bump.numberOfKeys).toBe(1);
  expect(bump.lua.match(/local NOW_SECONDS/g)).toHaveLength(1);
  expect(bump.lua).not.toContain('@include');
  expect(commands.get('sum-keys')!.numberOfKeys).toBeUndefined();
  expect(loadLuaCommands(FIXTURES)).toBe(commands);
});

test('calls take named input and give named fields; an empty Lua table reads as an empty list', async () => {
  await redis.del('c1');
  expect(await bumpAndRead(redis, { counter: 'c1', by: 2 })).toEqual({ value: 2, now: expect.any(Number), list: [] });
  expect((await bumpAndRead(redis, { counter: 'c1', by: 3 })).value).toBe(5);
  await redis.set('c2', 7);
  expect(await sumKeys(redis, ['c1', 'c2', 'c3'])).toBe(12);
});

test('a command still runs after Redis forgot every script (NOSCRIPT is answered with EVAL)', async () => {
  await redis.del('c4');
  await bumpAndRead(redis, { counter: 'c4', by: 1 });
  await redis.script('FLUSH');
  expect((await bumpAndRead(redis, { counter: 'c4', by: 1 })).value).toBe(2);
});

test('a wrong key count or an unknown command fails loudly, before anything is sent', async () => {
  const wrong = scripts.define({ command: 'bump-and-read', keys: () => ['a', 'b'], args: () => [1], reply: (raw) => raw });
  await expect(wrong(redis, {})).rejects.toThrow('takes 1 keys, was given 2');
  expect(() => scripts.define({ command: 'no-such', keys: () => [], args: () => [], reply: (raw) => raw })).toThrow('no Redis command no-such');
});

test('the source folder is used where it exists; otherwise dist/lua/<name> of the built tree', () => {
  expect(commandsFolder(FIXTURES, 'fixture')).toBe(FIXTURES);
  expect(commandsFolder(path.join(__dirname, 'nowhere'), 'scheduler')).toBe(path.join(__dirname, '../src/lua/scheduler'));
});
