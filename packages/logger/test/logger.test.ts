import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { createLogger, flatLineWriter } from '../src';

describe('logger', () => {
  it('writes JSON lines and never a secret, by field name or by shape', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    const logger = createLogger({ service: 'test', level: 'info', stream });
    const key = 'sk-live-' + 'A'.repeat(40);
    logger.info('login', { email: 'a@b.c', password: 'hunter22', headers: { 'x-api-key': key, authorization: 'Bearer abc' } });
    logger.warn(`used ${key} and whsec_${'B'.repeat(44)}`, { nested: { deeper: { plaintext_key: key, note: `key=${key}`, url: `/api/public/tasks/x?access_token=trt_${'C'.repeat(60)}` } }, access_token: 'trt_x' });
    logger.error('failed', { error: new Error(`bad key ${key}`) });
    logger.debug('not written at info level');
    await new Promise((r) => setImmediate(r));

    const out = chunks.join('');
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(() => JSON.parse(l)).not.toThrow();
    expect(out).not.toContain('hunter22');
    expect(out).not.toContain('A'.repeat(40));
    expect(out).not.toContain('B'.repeat(44));
    expect(out).not.toContain('C'.repeat(60));
    expect(out).toContain('access_token=trt_[redacted]');
    expect(out).not.toContain('Bearer abc');
    expect(out).toContain('sk-live-[redacted]');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ service: 'test', level: 'info', message: 'login', email: 'a@b.c', password: '[redacted]' });
    expect(JSON.parse(lines[2] as string).error.message).toBe('bad key sk-live-[redacted]');
  });

  it('writes a flat line exactly as winston would, secrets redacted', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    const logger = createLogger({ service: 'api', level: 'info', stream });
    const key = 'sk-live-' + 'A'.repeat(40);
    const fields = { request_id: 'req_1', method: 'GET', path: `/api/x/${key}/"quoted"\\\n\u2028`, status: 200, duration_ms: 1.25, account_id: undefined, key_prefix: 'sk-live-Ab', token: 'abc', note: `secret whsec_${'B'.repeat(44)}`, ok: true, none: null };
    logger.info('request', fields);
    flatLineWriter(logger, 'request', Object.keys(fields))('info', Object.values(fields));
    await new Promise((r) => setImmediate(r));

    const [viaWinston, flat] = chunks.join('').split('\n').map((l) => l.replace(/"timestamp":"[^"]+"/, '"timestamp":"T"'));
    expect(flat).toBe(viaWinston);
    expect(flat).not.toContain('A'.repeat(40));
    expect(flat).not.toContain('B'.repeat(44));
    expect(JSON.parse(flat as string)).toMatchObject({ service: 'api', level: 'info', message: 'request', status: 200, token: '[redacted]' });
  });

  it('refuses a flat line field that the logger writes itself', () => {
    const logger = createLogger({ service: 'api', level: 'info', stream: new PassThrough() });
    expect(() => flatLineWriter(logger, 'request', ['path', 'level'])).toThrow('"level" is written by the logger itself');
  });

  it('writes the info lines of a turn in one write when it ends, a warning at once, all in the order logged', async () => {
    const stream = new PassThrough();
    const writes: string[] = [];
    stream.on('data', (c: Buffer) => writes.push(c.toString()));
    const logger = createLogger({ service: 'api', level: 'info', stream });
    const flat = flatLineWriter(logger, 'flat', ['n']);
    logger.info('first');
    flat('info', [2]);
    expect(writes).toEqual([]);
    logger.warn('third');
    // The warning went out at once, with what was held before it, in one write.
    expect(writes).toHaveLength(1);
    expect(writes[0]!.trim().split('\n').map((l) => JSON.parse(l).message)).toEqual(['first', 'flat', 'third']);
    logger.info('fourth');
    flat('error', [5]);
    logger.info('sixth');
    await new Promise((r) => setImmediate(r));
    expect(writes.slice(1).map((w) => w.trim().split('\n').map((l) => JSON.parse(l).message))).toEqual([['fourth', 'flat'], ['sixth']]);
  });

  it('hands the lines still held to stdout when the process exits in the same turn', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures/log-then-exit.ts')], { encoding: 'utf8' });
    expect(out.trim().split('\n').map((l) => JSON.parse(l).message)).toEqual(['held until the turn ends', 'flat line']);
  });

  it('writes a sensitive field of a flat line as redacted even without a value, as winston does', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    const logger = createLogger({ service: 'api', level: 'info', stream });
    logger.info('line', { token: undefined, n: 1 });
    flatLineWriter(logger, 'line', ['token', 'n'])('info', [undefined, 1]);
    await new Promise((r) => setImmediate(r));
    const [viaWinston, flat] = chunks.join('').split('\n').map((l) => l.replace(/"timestamp":"[^"]+"/, '"timestamp":"T"'));
    expect(flat).toBe(viaWinston);
    expect(() => flatLineWriter(logger, 'line', ['n', 'n'])).toThrow('"n" is named twice');
  });
});

