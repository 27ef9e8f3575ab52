import { PassThrough } from 'node:stream';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { TEST_PASSWORD, waitFor, type TestResponse } from '@taskapi/testing';
import { SLOWDOWN_FIRST_DELAY_MS, slowdownMs, throttleAddress } from '../src/domain/login-throttle';
import { seedAccount, startApi, type TestApi } from './support/harness';

// Addresses are random (documentation and private ranges), so a rerun within the 15-minute
// windows never meets the counters of an earlier run.
const randomIpv4 = () => `10.${[...randomBytes(3)].join('.')}`;
const randomIpv6Prefix = () => `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
const wrongPassword = () => `guess-${randomBytes(6).toString('hex')}`;
const unknownEmail = () => `nobody-${randomBytes(6).toString('hex')}@example.test`;

/** A login as a client at `ip`, seen through one proxy (the instance runs with TRUST_PROXY=1). */
function loginFrom(api: TestApi, ip: string, email: string, password: string): Promise<TestResponse> {
  return api.req('POST', '/api/auth/login', { headers: { 'x-forwarded-for': ip }, body: { email, password } });
}

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const start = Date.now();
  const result = await work;
  return { result, ms: Date.now() - start };
}

function expectRefused(res: TestResponse): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ message: 'Too many login attempts. Try again later.', retry_after: expect.any(Number) });
  expect(res.body.retry_after).toBeGreaterThanOrEqual(1);
  expect(res.body.retry_after).toBeLessThanOrEqual(15 * 60);
  expect(res.headers.get('retry-after')).toBe(String(res.body.retry_after));
}

describe('login throttle', () => {
  // `api` seeds accounts (from 127.0.0.1, unthrottled); the others share its database and Redis.
  let api: TestApi;
  let proxied: TestApi;
  let perIp: TestApi;
  beforeAll(async () => {
    [api, proxied, perIp] = await Promise.all([
      startApi(),
      startApi({ TRUST_PROXY: '1' }),
      startApi({ TRUST_PROXY: '1', LOGIN_MAX_ATTEMPTS_PER_IP: '6' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([api, proxied, perIp].map((a) => a?.close()));
  });

  describe('per e-mail and address', () => {
    it('refuses an address after ten failures for an e-mail, while the owner logs in from elsewhere', async () => {
      const owner = await seedAccount(api);
      const other = await seedAccount(api);
      const attacker = randomIpv4();
      for (let i = 0; i < proxied.config.login.maxFailuresPerEmailAndIp; i++) {
        expect((await loginFrom(proxied, attacker, owner.email, wrongPassword())).status).toBe(401);
      }
      for (let i = 0; i < 5; i++) expectRefused(await loginFrom(proxied, attacker, owner.email, wrongPassword()));
      // Refused for this pair even with the right password: the attacker's address learns nothing.
      expectRefused(await loginFrom(proxied, attacker, owner.email, TEST_PASSWORD));

      const { result, ms } = await timed(loginFrom(proxied, randomIpv4(), owner.email, TEST_PASSWORD));
      expect(result.status).toBe(200);
      // Only one address failed, so nothing slows the owner: expect about one password check.
      console.log(`owner logged in from a fresh address in ${ms} ms during a single-address attack`);
      // The address is only refused for that e-mail (a shared NAT still reaches other accounts).
      expect((await loginFrom(proxied, attacker, other.email, TEST_PASSWORD)).status).toBe(200);
    });

    it('a success clears the failures of its own address', async () => {
      const owner = await seedAccount(api);
      const home = randomIpv4();
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < proxied.config.login.maxFailuresPerEmailAndIp - 1; i++) {
          expect((await loginFrom(proxied, home, owner.email, wrongPassword())).status).toBe(401);
        }
        expect((await loginFrom(proxied, home, owner.email, TEST_PASSWORD)).status).toBe(200);
      }
    });

    it('runs one attempt at a time per e-mail and address', async () => {
      const owner = await seedAccount(api);
      const ip = randomIpv4();
      const both = await Promise.all([0, 1].map(() => loginFrom(proxied, ip, owner.email, wrongPassword())));
      const refused = both.find((r) => r.status === 429);
      expect(both.map((r) => r.status).sort()).toEqual([401, 429]);
      expectRefused(refused!);
      // From another address, at the same time, nothing is refused.
      const [wrong, right] = await Promise.all([
        loginFrom(proxied, ip, owner.email, wrongPassword()),
        loginFrom(proxied, randomIpv4(), owner.email, TEST_PASSWORD),
      ]);
      expect([wrong.status, right.status]).toEqual([401, 200]);
    });

    it('counts unknown e-mails like known ones', async () => {
      const email = unknownEmail();
      const ip = randomIpv4();
      for (let i = 0; i < proxied.config.login.maxFailuresPerEmailAndIp; i++) {
        expect((await loginFrom(proxied, ip, email, wrongPassword())).status).toBe(401);
      }
      expectRefused(await loginFrom(proxied, ip, email.toUpperCase(), wrongPassword()));
    });
  });

  describe('per e-mail across addresses: slowed, never refused', () => {
    it('the delay grows with the number of failing addresses, not with failures', () => {
      const cap = 2_000;
      expect([0, 1, 2, 3, 4, 5, 6, 7, 50].map((n) => slowdownMs(n, cap))).toEqual([0, 0, 0, 250, 500, 1000, 2000, 2000, 2000]);
      expect(slowdownMs(3, 100)).toBe(100);
      expect(SLOWDOWN_FIRST_DELAY_MS).toBe(250);
    });

    it('lets the owner in within seconds while many addresses guess in parallel', async () => {
      const owner = await seedAccount(api);
      const cap = proxied.config.login.slowdownMaxMs;
      const failingAddresses = new Set<string>();
      const statuses: number[] = [];
      const guessMs: number[] = [];
      let stop = false;
      const attackerCount = 16;
      const attackers = Array.from({ length: attackerCount }, async () => {
        const ip = randomIpv4();
        while (!stop) {
          const { result, ms } = await timed(loginFrom(proxied, ip, owner.email, wrongPassword()));
          statuses.push(result.status);
          if (result.status !== 401) break;
          guessMs.push(ms);
          failingAddresses.add(ip);
        }
      });
      try {
        // Every attacking address has failed: the slowdown is at its cap (from the sixth) and the
        // attack runs in its steady state, each address guessing again as soon as it is answered.
        await waitFor(() => failingAddresses.size === attackerCount, { timeoutMs: 60_000, what: 'every attacking address failing' });
        const guessesBefore = statuses.length;
        const { result, ms } = await timed(loginFrom(proxied, randomIpv4(), owner.email, TEST_PASSWORD));
        const guessesDuring = statuses.length - guessesBefore;
        console.log(
          `distributed attack (${attackerCount} addresses): owner got ${result.status} from a fresh address in ${ms} ms ` +
            `(delay cap ${cap} ms); ${guessesDuring} guesses answered meanwhile`,
        );
        expect(result.status).toBe(200);
        expect(ms).toBeLessThan(10_000);
        // Slowed like every attempt for this e-mail: it waited at least the delay (a lower bound
        // is exact; the server cannot check sooner).
        expect(ms).toBeGreaterThanOrEqual(cap - 20);
      } finally {
        stop = true;
        await Promise.all(attackers);
      }
      expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
      const sorted = [...guessMs].sort((a, b) => a - b);
      console.log(`attack: ${statuses.length} guesses answered; latency median ${sorted[sorted.length >> 1]} ms, max ${sorted.at(-1)} ms`);
    }, 90_000);

    it('checks of one e-mail take turns: two concurrent guesses are a delay apart', async () => {
      const slowed = await startApi({ TRUST_PROXY: '1', LOGIN_SLOWDOWN_MAX_MS: '300' });
      try {
        const owner = await seedAccount(api);
        for (let i = 0; i < 6; i++) expect((await loginFrom(slowed, randomIpv4(), owner.email, wrongPassword())).status).toBe(401);
        // Six failing addresses: every check waits 300 ms, one check at a time.
        const both = await Promise.all([0, 1].map(() => timed(loginFrom(slowed, randomIpv4(), owner.email, wrongPassword()))));
        expect(both.map((b) => b.result.status)).toEqual([401, 401]);
        const [first, second] = both.map((b) => b.ms).sort((a, b) => a - b) as [number, number];
        console.log(`two concurrent guesses with a 300 ms delay answered after ${first} and ${second} ms`);
        expect(first).toBeGreaterThanOrEqual(300 - 20);
        // In parallel both would be answered after one delay; in turns the second waits for two.
        expect(second).toBeGreaterThanOrEqual(2 * 300 - 20);
        // And the right password still gets in.
        expect((await loginFrom(slowed, randomIpv4(), owner.email, TEST_PASSWORD)).status).toBe(200);
      } finally {
        await slowed.close();
      }
    });
  });

  describe('per address', () => {
    it('limits attempts from one address across e-mails, with Retry-After', async () => {
      const owner = await seedAccount(api);
      const ip = randomIpv4();
      for (let i = 0; i < 6; i++) expect((await loginFrom(perIp, ip, unknownEmail(), wrongPassword())).status).toBe(401);
      expectRefused(await loginFrom(perIp, ip, unknownEmail(), wrongPassword()));
      expectRefused(await loginFrom(perIp, ip, owner.email, TEST_PASSWORD));
      expect((await loginFrom(perIp, randomIpv4(), owner.email, TEST_PASSWORD)).status).toBe(200);
    });

    it('counts an IPv6 client by its /64', async () => {
      const prefix = randomIpv6Prefix();
      for (let i = 1; i <= 6; i++) expect((await loginFrom(perIp, `${prefix}::${i}`, unknownEmail(), wrongPassword())).status).toBe(401);
      expectRefused(await loginFrom(perIp, `${prefix}:0:0:0:ffff`, unknownEmail(), wrongPassword()));
      expect((await loginFrom(perIp, `${randomIpv6Prefix()}::1`, unknownEmail(), wrongPassword())).status).toBe(401);
    });

    it('normalizes addresses: IPv4 as is, IPv4-mapped as IPv4, IPv6 to its /64', () => {
      expect(throttleAddress('203.0.113.9')).toBe('203.0.113.9');
      expect(throttleAddress('::ffff:203.0.113.9')).toBe('203.0.113.9');
      expect(throttleAddress('2001:DB8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
      expect(throttleAddress('2001:db8:1:2::7')).toBe('2001:db8:1:2::/64');
      expect(throttleAddress('2001:db8::1')).toBe('2001:db8:0:0::/64');
      expect(throttleAddress('::1')).toBe('0:0:0:0::/64');
      expect(throttleAddress('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
      // Ports a proxy writes along are dropped; what is not an address at all shares one bucket.
      expect(throttleAddress('203.0.113.9:5678')).toBe('203.0.113.9');
      expect(throttleAddress('[2001:db8::1]:443')).toBe('2001:db8:0:0::/64');
      expect(throttleAddress('[2001:db8::1]')).toBe('2001:db8:0:0::/64');
      for (const junk of ['', 'unknown', 'not-an-address', '1.2.3.4.5', '999.1.1.1', '203.0.113.9:x', '[nope]:1']) {
        expect({ junk, bucket: throttleAddress(junk) }).toEqual({ junk, bucket: 'unreadable' });
      }
    });

    it('a forwarded address with a different port each time is still one address', async () => {
      const ip = randomIpv4();
      for (let i = 0; i < 6; i++) expect((await loginFrom(perIp, `${ip}:${40_000 + i}`, unknownEmail(), wrongPassword())).status).toBe(401);
      expectRefused(await loginFrom(perIp, `${ip}:50000`, unknownEmail(), wrongPassword()));
      expectRefused(await loginFrom(perIp, ip, unknownEmail(), wrongPassword()));
    });
  });

  describe('client address and X-Forwarded-For', () => {
    /** A login over a connection from `localAddress` (any 127.0.0.0/8 address is this host). */
    function loginOverSocketFrom(api: TestApi, localAddress: string, headers: Record<string, string>): Promise<number> {
      const body = JSON.stringify({ email: unknownEmail(), password: wrongPassword() });
      const url = new URL('/api/auth/login', api.url);
      return new Promise((resolve, reject) => {
        const req = http.request(
          url,
          { method: 'POST', localAddress, agent: false, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    }

    it('without TRUST_PROXY a forged X-Forwarded-For does not change the address the limit sees', async () => {
      const log = new PassThrough();
      let logged = '';
      log.on('data', (chunk: Buffer) => (logged += chunk.toString()));
      const direct = await startApi({ LOGIN_MAX_ATTEMPTS_PER_IP: '6', LOG_LEVEL: 'warn' }, { logStream: log });
      try {
        expect(direct.config.trustProxy).toBe(0);
        const peer = `127.${[...randomBytes(3)].map((b) => Math.max(b, 2)).join('.')}`;
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) statuses.push(await loginOverSocketFrom(direct, peer, { 'x-forwarded-for': randomIpv4() }));
        expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429, 429]);
        // The operator is told, once, that a proxy in front would make all clients one address.
        expect(logged.split('\n').filter((line) => line.includes('X-Forwarded-For received while TRUST_PROXY=0'))).toHaveLength(1);
      } finally {
        await direct.close();
      }
    });

    it('with one proxy hop, entries a client writes before the proxy\'s are ignored', async () => {
      const client = randomIpv4();
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        // The proxy appends the address it saw; everything to its left came from the client.
        const res = await perIp.req('POST', '/api/auth/login', {
          headers: { 'x-forwarded-for': `${randomIpv4()}, ${randomIpv4()}, ${client}` },
          body: { email: unknownEmail(), password: wrongPassword() },
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429, 429]);
    });
  });
});
