import { spawn } from 'node:child_process';
import path from 'node:path';
import { descendants, isAlive, processName, startPrivateRedis, waitFor } from '../src';

const ROOT = path.resolve(__dirname, '../../..');

describe('servers of a test process that was killed', () => {
  it('are ended by the next start of a server', async () => {
    // A process that starts a private Redis, prints its pid, and is then killed before cleaning up.
    const owner = spawn(
      process.execPath,
      ['--import', 'tsx', '-e', "require('./packages/testing/src').startPrivateRedis().then((redis) => console.log(redis.pid))"],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    owner.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const orphan = await waitFor(() => Number(out.trim()) || undefined, { timeoutMs: 20_000, what: 'the owner to start its Redis' });
    expect(processName(orphan)).toBe('redis-server');
    // The owner's other children (tsx's esbuild service) die with it, as they would under Ctrl-C.
    const helpers = descendants(owner.pid!).filter((pid) => pid !== orphan);
    owner.kill('SIGKILL');
    for (const pid of helpers) process.kill(pid, 'SIGKILL');
    owner.stdout.destroy();
    await waitFor(() => !isAlive(owner.pid!), { timeoutMs: 5_000, what: 'the owner to die' });
    expect(isAlive(orphan)).toBe(true);

    const next = await startPrivateRedis();
    try {
      await waitFor(() => !isAlive(orphan), { timeoutMs: 5_000, what: 'the orphaned redis-server to be ended' });
    } finally {
      await next.stop();
    }
  });
});
