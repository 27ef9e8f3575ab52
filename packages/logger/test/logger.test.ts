import { PassThrough } from 'node:stream';
import { createLogger } from '../src';

describe('logger', () => {
  it('writes JSON lines and never a secret, by field name or by shape', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    const logger = createLogger({ service: 'test', level: 'info', stream });
    const key = 'sk-live-' + 'A'.repeat(40);
    logger.info('login', { email: 'a@b.c', password: 'hunter22', headers: { 'x-api-key': key, authorization: 'Bearer abc' } });
    logger.warn(`used ${key} and whsec_${'B'.repeat(44)}`, { nested: { deeper: { plaintext_key: key, note: `key=${key}` } } });
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
    expect(out).not.toContain('Bearer abc');
    expect(out).toContain('sk-live-[redacted]');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ service: 'test', level: 'info', message: 'login', email: 'a@b.c', password: '[redacted]' });
    expect(JSON.parse(lines[2] as string).error.message).toBe('bad key sk-live-[redacted]');
  });
});
