// Every way of spelling an IP address in a URL ends up checked as the address it means. The
// loopback spellings point at a real HTTPS server on 127.0.0.1 whose certificate the client
// trusts, so a spelling that slipped past the check would be answered there.
import { startHttpsReceiver, testCa, type HttpsReceiver } from '@taskapi/testing';
import { classifyAddress, createEgressClient, EgressError, type EgressClient } from '../src';
import { hostAddress } from '../src/egress-client';

/** [URL with `{port}` for the receiver's port, the address the URL's host means]. */
type Spelling = [url: string, address: string];

const refused: Spelling[] = [
  ['https://127.0.0.1:{port}/', '127.0.0.1'],
  ['https://2130706433:{port}/', '127.0.0.1'], // decimal
  ['https://0x7f000001:{port}/', '127.0.0.1'], // hex
  ['https://0177.0.0.1:{port}/', '127.0.0.1'], // octal
  ['https://0x7f.1:{port}/', '127.0.0.1'], // hex, short form
  ['https://0X7F.0.0.1:{port}/', '127.0.0.1'],
  ['https://127.1:{port}/', '127.0.0.1'], // short forms
  ['https://127.0.1:{port}/', '127.0.0.1'],
  ['https://00000000000000000177.1:{port}/', '127.0.0.1'],
  ['https://127.0.0.1.:{port}/', '127.0.0.1'], // trailing dot
  ['https://%31%32%37.0.0.1:{port}/', '127.0.0.1'], // percent-encoded
  ['https://１２７.０.０.１:{port}/', '127.0.0.1'], // full-width digits
  ['https://127。0。0。1:{port}/', '127.0.0.1'], // ideographic full stops
  ['https://user:secret@127.0.0.1:{port}/', '127.0.0.1'],
  ['https://0:{port}/', '0.0.0.0'],
  ['https://10.1/', '10.0.0.1'],
  ['https://0300.0250.1.1/', '192.168.1.1'],
  ['https://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254'],
  ['https://2852039166/', '169.254.169.254'],
  ['https://100.64.1/', '100.64.0.1'],
  ['https://4294967295/', '255.255.255.255'],
  ['https://[::1]:{port}/', '::1'],
  ['https://[0:0:0:0:0:0:0:1]:{port}/', '::1'],
  ['https://[::]/', '::'],
  ['https://[::127.0.0.1]:{port}/', '::7f00:1'], // IPv4-compatible
  ['https://[::ffff:127.0.0.1]:{port}/', '::ffff:7f00:1'], // IPv4-mapped
  ['https://[::FFFF:7F00:1]:{port}/', '::ffff:7f00:1'],
  ['https://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe'],
  ['https://[2002:7f00:1::]/', '2002:7f00:1::'], // 6to4
  ['https://[64:ff9b::127.0.0.1]/', '64:ff9b::7f00:1'], // NAT64 well-known prefix
  ['https://[64:ff9b:1::a00:1]/', '64:ff9b:1::a00:1'], // NAT64 local-use prefix
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', '2001:0:4136:e378:8000:63bf:3fff:fdd2'], // Teredo
  ['https://[FE80::1]/', 'fe80::1'],
  ['https://[fd00::1]/', 'fd00::1'],
  ['https://[ff02::1]/', 'ff02::1'],
];

// Public addresses in unusual spellings: the check lets them through (not sent anywhere here).
const allowed: Spelling[] = [
  ['https://134744072/', '8.8.8.8'],
  ['https://0x8.0x8.0x8.0x8/', '8.8.8.8'],
  ['https://010.010.010.010/', '8.8.8.8'],
  ['https://8.8.2056/', '8.8.8.8'],
  ['https://8.8.8.8./', '8.8.8.8'],
  ['https://[::ffff:8.8.8.8]/', '::ffff:808:808'],
  ['https://[64:ff9b::8.8.8.8]/', '64:ff9b::808:808'],
  ['https://[2606:4700:4700:0:0:0:0:1111]/', '2606:4700:4700::1111'],
];

// Not valid https URLs at all: refused before any address is looked at.
const invalidUrls: string[] = [
  'https://[fe80::1%25eth0]/', // zone ids are not valid in URLs
  'https://[::1%25lo]/',
  'https://[::1]./',
  'https://0x100000000/',
  'https://4294967296/',
  'https://256.0.0.1/',
  'https://1.2.3.4.5/',
  'https://foo.0x7f/',
  'https://127.0.0.1:99999/',
  'https://[::ffff:010.0.0.1]/',
  'http://127.0.0.1/',
  'http://93.184.216.34/',
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_FLUSHALL',
];

describe('host spellings: the parser normalizes, the policy decides', () => {
  it.each([...refused, ...allowed])('%s means %s', (url, address) => {
    expect(hostAddress(new URL(url.replace('{port}', '443')))).toBe(address);
  });

  it.each(allowed)('%s (%s) is a public address', (_url, address) => {
    expect(classifyAddress(address).allowed).toBe(true);
  });

  it('host names are not addresses: they go to the resolver', () => {
    for (const url of ['https://localhost/', 'https://localhost./', 'https://example.com/', 'https://127.0.0.1.nip.io/', 'https://0x7f.1.example/']) {
      expect(hostAddress(new URL(url))).toBeNull();
    }
  });
});

describe('egress client refuses every spelling of a non-public address', () => {
  let receiver: HttpsReceiver;
  let client: EgressClient;
  let port: string;
  const resolved: string[] = [];

  beforeAll(async () => {
    receiver = await startHttpsReceiver(() => 200);
    port = new URL(receiver.url()).port;
    client = createEgressClient({
      allowPrivateNetworks: false,
      tls: { ca: testCa().caCert },
      resolve: async (hostname) => {
        resolved.push(hostname);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
  });
  afterAll(async () => {
    await client.close();
    await receiver.close();
  });

  async function refusal(url: string): Promise<EgressError> {
    const err = await client.request({ method: 'POST', url, body: '{}', timeoutMs: 5_000, maxResponseBytes: 1024 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EgressError);
    return err as EgressError;
  }

  it.each(refused)('%s is refused as %s, and nothing is sent', async (url, address) => {
    const err = await refusal(url.replace('{port}', port));
    expect(err.code).toBe('blocked_destination');
    expect(err.message).toBe(`destination not allowed: ${address} resolves to a private, loopback, link-local or reserved address`);
    expect(resolved).toEqual([]);
    expect(receiver.received).toHaveLength(0);
  });

  it.each(invalidUrls)('%s is not a valid https URL', async (url) => {
    expect((await refusal(url)).code).toBe('invalid_url');
    expect(receiver.received).toHaveLength(0);
  });

  it.each(['localhost', 'localhost.', 'LOCALHOST'])('the name %s is resolved, its address checked and refused', async (name) => {
    resolved.length = 0;
    const err = await refusal(`https://${name}:${port}/`);
    expect(err.code).toBe('blocked_destination');
    expect(resolved).toEqual([name.toLowerCase()]);
    expect(receiver.received).toHaveLength(0);
  });
});
