// A host name's whole DNS answer is checked: one refused address refuses the host, whatever the
// order and whichever family the connection would use. The socket connects to an address from
// that checked answer, never to one from a second resolution.
import net from 'node:net';
import { startHttpsReceiver, testCa, type HttpsReceiver } from '@taskapi/testing';
import { createEgressClient, EgressError, type HostResolver, type ResolvedAddress } from '../src';
import { checkedLookup } from '../src/checked-lookup';

const at = (address: string): ResolvedAddress => ({ address, family: net.isIPv6(address) ? 6 : 4 });

/** A resolver with fixed answers that records every name it is asked for. */
function fixedResolver(answers: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const answer = answers[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answer.map(at);
  };
  return Object.assign(resolve, { asked });
}

async function failure(p: Promise<unknown>): Promise<EgressError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EgressError);
  return err as EgressError;
}

// Public first and last, both families, and every kind of refused address hidden among them.
const mixedAnswers: [name: string, answer: string[]][] = [
  ['public-then-loopback.example', ['93.184.216.34', '127.0.0.1']],
  ['loopback-then-public.example', ['127.0.0.1', '93.184.216.34']],
  ['metadata.example', ['8.8.8.8', '169.254.169.254']],
  ['private.example', ['8.8.8.8', '1.1.1.1', '10.0.0.7']],
  ['cgnat.example', ['8.8.8.8', '100.64.0.1']],
  ['v6-loopback.example', ['2606:4700:4700::1111', '::1']],
  ['v6-ula.example', ['93.184.216.34', 'fd00::1']],
  ['v6-link-local.example', ['2606:4700:4700::1111', 'fe80::1%eth0']],
  ['mapped.example', ['93.184.216.34', '::ffff:127.0.0.1']],
  ['compatible.example', ['93.184.216.34', '::7f00:1']],
  ['nat64.example', ['64:ff9b::808:808', '64:ff9b::a00:1']],
  ['nat64-local.example', ['93.184.216.34', '64:ff9b:1::7f00:1']],
  ['6to4.example', ['93.184.216.34', '2002:7f00:1::']],
  ['teredo.example', ['93.184.216.34', '2001:0:4136:e378:8000:63bf:3fff:fdd2']],
  ['unspecified.example', ['93.184.216.34', '0.0.0.0']],
  ['garbage.example', ['93.184.216.34', 'not-an-address']],
];

describe('checked lookup (what net.connect is handed)', () => {
  const lookup = (resolve: HostResolver, allowPrivate: boolean) => {
    const fn = checkedLookup(resolve, allowPrivate);
    return {
      all: (host: string, family = 0) =>
        new Promise<ResolvedAddress[]>((ok, fail) => fn(host, { all: true, family }, (err, addresses) => (err ? fail(err) : ok(addresses as ResolvedAddress[])))),
      one: (host: string, family: number) =>
        new Promise<{ address: unknown; family: unknown }>((ok, fail) => fn(host, { family }, (err, address, fam) => (err ? fail(err) : ok({ address, family: fam })))),
    };
  };

  it('a public answer is handed over whole, in order, resolved once', async () => {
    const resolve = fixedResolver({ 'hooks.example': ['93.184.216.34', '2606:4700:4700::1111', '8.8.8.8'] });
    const l = lookup(resolve, false);
    expect(await l.all('hooks.example')).toEqual([at('93.184.216.34'), at('2606:4700:4700::1111'), at('8.8.8.8')]);
    expect(await l.one('hooks.example', 0)).toEqual(at('93.184.216.34'));
    expect(await l.one('hooks.example', 6)).toEqual(at('2606:4700:4700::1111'));
    expect(await l.all('hooks.example', 4)).toEqual([at('93.184.216.34'), at('8.8.8.8')]);
    expect(resolve.asked).toEqual(['hooks.example', 'hooks.example', 'hooks.example', 'hooks.example']);
  });

  it.each(mixedAnswers)('%s %j is refused as a whole', async (name, answer) => {
    const l = lookup(fixedResolver({ [name]: answer }), false);
    await expect(l.all(name)).rejects.toMatchObject({ code: 'ERR_EGRESS_BLOCKED' });
    // Even when the connection would only use the public family.
    await expect(l.one(name, net.isIPv6(answer[0] ?? '') ? 6 : 4)).rejects.toMatchObject({ code: 'ERR_EGRESS_BLOCKED' });
  });

  it('with private networks allowed (local development), any answer is handed over', async () => {
    const l = lookup(fixedResolver({ 'dev.example': ['127.0.0.1', '10.0.0.7'] }), true);
    expect(await l.all('dev.example')).toEqual([at('127.0.0.1'), at('10.0.0.7')]);
  });

  it('an answer without the family asked for is "not found"', async () => {
    const l = lookup(fixedResolver({ 'v4only.example': ['93.184.216.34'] }), false);
    await expect(l.one('v4only.example', 6)).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('egress client with a fixed resolver', () => {
  let receiver: HttpsReceiver;
  let port: number;

  beforeAll(async () => {
    receiver = await startHttpsReceiver(() => ({ status: 200, body: 'ok' }));
    port = Number(new URL(receiver.url()).port);
  });
  afterAll(() => receiver.close());

  it.each(mixedAnswers)('refuses %s %j before connecting', async (name, answer) => {
    const resolve = fixedResolver({ [name]: answer });
    const client = createEgressClient({ allowPrivateNetworks: false, tls: { ca: testCa().caCert }, resolve });
    try {
      const err = await failure(client.request({ method: 'POST', url: `https://${name}:${port}/hook`, body: '{}', timeoutMs: 5_000, maxResponseBytes: 64 }));
      expect(err.code).toBe('blocked_destination');
      expect(err.message).toBe(`destination not allowed: ${name} resolves to a private, loopback, link-local or reserved address`);
      expect(resolve.asked).toEqual([name]);
      expect(receiver.received).toHaveLength(0);
    } finally {
      await client.close();
    }
  });

  it('a name the resolver does not know is a dns_failure', async () => {
    const client = createEgressClient({ allowPrivateNetworks: false, resolve: fixedResolver({}) });
    try {
      const err = await failure(client.request({ method: 'GET', url: 'https://nowhere.example/', timeoutMs: 5_000, maxResponseBytes: 64 }));
      expect(err).toMatchObject({ code: 'dns_failure', message: 'could not resolve nowhere.example (ENOTFOUND)' });
    } finally {
      await client.close();
    }
  });

  it('connects to the address the resolver answered, not to what the system resolves', async () => {
    // `localhost` resolves to 127.0.0.1 on this machine, where the receiver listens. The checked
    // answer says 127.0.0.2, where a relay to the receiver counts its connections: the request
    // only arrives if the socket went to the checked address.
    const relayed: string[] = [];
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((socket) => {
      relayed.push(socket.localAddress ?? '');
      const upstream = net.connect(port, '127.0.0.1');
      for (const s of [socket, upstream]) {
        sockets.add(s);
        s.on('error', () => s.destroy());
      }
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => relay.listen(port, '127.0.0.2', resolve));
    const resolve = fixedResolver({ localhost: ['127.0.0.2'] });
    const client = createEgressClient({ allowPrivateNetworks: true, tls: { ca: testCa().caCert }, resolve });
    try {
      const res = await client.request({ method: 'POST', url: receiver.url('/checked'), body: '{}', timeoutMs: 5_000, maxResponseBytes: 64 });
      expect(res.status).toBe(200);
      expect(res.body.toString()).toBe('ok');
      expect(resolve.asked).toEqual(['localhost']);
      expect(relayed).toEqual(['127.0.0.2']);
      expect(receiver.at('/checked')).toHaveLength(1);
    } finally {
      await client.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});
