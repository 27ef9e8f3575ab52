// The fuzz suite: thousands of requests generated from the route registry's own request schemas
// (valid, nearly valid and hostile values; hostile headers, encodings and paths) against a real API
// on real PostgreSQL and Redis. Not one may answer 5xx or log an unhandled error.
//
// Replay a failure with the printed seed: FUZZ_SEED=<seed> npx jest services/api/test/fuzz.test.ts
// (FUZZ_RUNS=<n> changes the number of requests).
import http from 'node:http';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { newId } from '@taskapi/ids';
import { ROUTES } from '../src/routes';
import { createKey, seedAccount, startApi, type CreatedKey, type TestAccount, type TestApi } from './support/harness';
import { requestsFor, strayRequests, type FuzzRequest, type KnownIds } from './support/fuzz-requests';

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 6000);

interface Answer {
  status: number;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function send(baseUrl: string, req: FuzzRequest, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const allHeaders = { ...req.headers, ...headers, ...req.extraHeaders };
    const out = http.request(`${baseUrl}${req.path}`, { method: req.method, headers: allHeaders, agent }, (res) => {
      // A task's event stream runs until the task ends (none does here): its status is the answer.
      if (res.statusCode === 200 && res.headers['content-type'] === 'text/event-stream' && req.method !== 'HEAD') {
        res.destroy();
        resolve({ status: 200, body: '' });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8').slice(0, 500) }));
      res.on('error', reject);
    });
    out.on('error', (err: NodeJS.ErrnoException) => {
      // Node's HTTP parser refuses a request head over --max-http-header-size with 431, or, for one
      // far over it (Node 24), by resetting the connection: Node's refusal, not an answer of ours.
      const headBytes = Buffer.byteLength(req.path) + Object.entries(allHeaders).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v) + 4, 0);
      if (err.code === 'ECONNRESET' && headBytes > http.maxHeaderSize) resolve({ status: 431, body: 'connection reset: request head too large' });
      else reject(err);
    });
    out.end(req.body);
  });
}

describe('fuzz: every endpoint, generated from its schemas', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  const log = new PassThrough();
  const logLines: string[] = [];
  const ids: KnownIds = {};

  beforeAll(async () => {
    log.setEncoding('utf8');
    let partial = '';
    log.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      logLines.push(...lines);
    });
    // Limits out of the way, so requests reach validation and the handlers rather than a 429.
    api = await startApi(
      {
        RATE_LIMIT_PAID_PER_MINUTE: '100000000',
        RATE_LIMIT_PAID_PER_DAY: '100000000',
        LOGIN_MAX_ATTEMPTS_PER_IP: '100000000',
        LOGIN_MAX_FAILURES_PER_EMAIL_AND_IP: '100000000',
        LOGIN_SLOWDOWN_MAX_MS: '1',
        LOG_LEVEL: 'info',
      },
      { logStream: log },
    );
    account = await seedAccount(api, { credits: 1_000_000_000 });
    key = await createKey(api, account, { type: 'paid' });
    // Real ids to aim at: tasks of the account, and keys the fuzzer may revoke and reissue (not the one it uses).
    const tasks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.req('POST', '/api/tasks/image-generation', { headers: { 'x-api-key': key.plaintext }, body: { prompt: `fuzz ${i}` } });
      tasks.push(res.body.public_id as string);
    }
    const spareKeys: string[] = [];
    for (let i = 0; i < 3; i++) spareKeys.push((await createKey(api, account, { type: 'paid' })).id);
    // A finished delivery, so resend reaches its handler (no worker or dispatcher runs here).
    const deliveryId = newId('delivery');
    await api.deps.db.pool.query(
      `INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, state, attempt_count)
       SELECT $1, id, account_id, 'https://hooks.example/fuzz', 20, 'failed', 6 FROM tasks WHERE public_id = $2`,
      [deliveryId, tasks[0]],
    );
    Object.assign(ids, { publicId: tasks, keyId: spareKeys, name: ['output.png', 'image.png', 'video.mp4'], deliveryId: [deliveryId] });
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    await api.close();
  });

  it(`answers ${RUNS} generated requests without a 5xx or an unhandled error`, async () => {
    const routes = fc.oneof(...ROUTES.map((route) => requestsFor(route, ids)), strayRequests);
    const statuses = new Map<number, number>();
    let reached = 0;
    let sent = 0;

    const credentials = async (req: FuzzRequest): Promise<Record<string, string>> => {
      const route = ROUTES.find((r) => r.operationId === req.route);
      const auth = route?.auth ?? (req.path.startsWith('/api/tasks') ? 'apiKey' : 'session');
      if (req.auth === 'none' || auth === 'none') return {};
      if (auth === 'apiKey') return { 'x-api-key': req.auth === 'valid' ? key.plaintext : 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
      if (req.auth === 'bogus') return { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' };
      // Logging out ends the session it is sent with: give each logout a session of its own.
      const token = req.route === 'logout' ? api.deps.sessions.issue(account.id).token : account.token;
      return { authorization: `Bearer ${token}` };
    };

    console.log(`fuzz: seed ${SEED}, ${RUNS} requests (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`);
    await fc.assert(
      fc.asyncProperty(routes, async (req) => {
        const answer = await send(api.url, req, await credentials(req));
        sent++;
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        // Validation or a handler answered (not authentication, the rate limit, routing or the body parser's type check).
        if (![401, 403, 404, 405, 415, 429, 431].includes(answer.status)) reached++;
        if (answer.status >= 500) throw new Error(`${req.method} ${req.path.slice(0, 200)} → ${answer.status} ${answer.body}`);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: false },
    );

    const summary = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ');
    console.log(`fuzz: ${sent} requests sent; statuses ${summary}; ${((100 * reached) / sent).toFixed(1)} % reached validation or a handler`);
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    expect(reached / sent).toBeGreaterThan(0.5);
    // Neither a bug nor a refusal validation should have caught first.
    const unhandled = logLines.filter((line) => line.includes('unhandled error') || line.includes('database refused a request value'));
    expect(unhandled).toEqual([]);
  }, 600_000);
});
