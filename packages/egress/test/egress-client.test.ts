import https from 'node:https';
import net from 'node:net';
import { startHttpsReceiver, testCa, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createEgressClient, EgressError, MAX_CONNECTIONS_PER_HOST, type EgressClient, type EgressRequest } from '../src';

const get = (url: string, extra: Partial<EgressRequest> = {}): EgressRequest => ({
  method: 'GET',
  url,
  timeoutMs: 5_000,
  maxResponseBytes: 1024,
  ...extra,
});

async function failure(p: Promise<unknown>): Promise<EgressError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EgressError);
  return err as EgressError;
}

describe('egress client, private networks refused (production default)', () => {
  const client = createEgressClient({ allowPrivateNetworks: false });
  afterAll(() => client.close());

  it.each([
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://10.0.0.5/',
  ])('refuses %s before sending anything', async (url) => {
    const err = await failure(client.request(get(url)));
    expect(err.code).toBe('blocked_destination');
    expect(err.message).toMatch(/destination not allowed/);
  });

  it('refuses plain http', async () => {
    expect((await failure(client.request(get('http://example.com/')))).code).toBe('invalid_url');
  });
});

describe('egress client against a real HTTPS server with its own CA', () => {
  let receiver: HttpsReceiver;
  let client: EgressClient;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    receiver = await startHttpsReceiver(async (req) => {
      if (req.path === '/big') return { status: 200, body: Buffer.alloc(100_000, 120) };
      if (req.path === '/redirect') return { status: 302, headers: { location: '/elsewhere' } };
      if (req.path === '/slow') {
        await new Promise<void>((resolve) => (release = resolve));
        return 200;
      }
      return { status: 200, body: `you sent ${req.body.length} bytes` };
    });
    client = createEgressClient({ allowPrivateNetworks: true, tls: { ca: testCa().caCert } });
  });
  afterAll(async () => {
    release();
    await client.close();
    await receiver.close();
  });

  it('sends the body and reads the answer', async () => {
    const res = await client.request({ ...get(receiver.url('/echo')), method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('you sent 7 bytes');
    expect(receiver.at('/echo')[0]?.headers['content-type']).toBe('application/json');
  });

  it('caps the response body it reads', async () => {
    const res = await client.request(get(receiver.url('/big'), { maxResponseBytes: 1000 }));
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(true);
  });

  it('does not follow redirects', async () => {
    const res = await client.request(get(receiver.url('/redirect')));
    expect(res.status).toBe(302);
    expect(receiver.at('/elsewhere')).toHaveLength(0);
  });

  it('ends a request at its deadline', async () => {
    const err = await failure(client.request(get(receiver.url('/slow'), { timeoutMs: 300 })));
    expect(err.code).toBe('timeout');
  });

  it('verifies TLS: a server whose CA is not trusted fails', async () => {
    const untrusting = createEgressClient({ allowPrivateNetworks: true });
    try {
      const err = await failure(untrusting.request(get(receiver.url('/echo'))));
      expect(err.code).toBe('tls_failure');
    } finally {
      await untrusting.close();
    }
  });

  it('verifies the host name: the certificate is for localhost, not another name for the same address', async () => {
    const url = receiver.url('/echo').replace('localhost', '127.0.0.2');
    const err = await failure(client.request(get(url)));
    expect(['tls_failure', 'connect_failure']).toContain(err.code);
  });

  it('reports a refused connection', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const err = await failure(client.request(get(`https://localhost:${port}/`)));
    expect(err.code).toBe('connect_failure');
  });
});

describe('egress client connections', () => {
  it('reuses connections to a host and opens at most MAX_CONNECTIONS_PER_HOST to it', async () => {
    const ca = testCa();
    let handshakes = 0;
    let holding = true;
    const held: Array<() => void> = [];
    const server = https.createServer({ key: ca.serverKey, cert: ca.serverCert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        const answer = () => res.writeHead(204).end();
        if (holding && req.url === '/hold') held.push(answer);
        else answer();
      });
    });
    server.on('secureConnection', () => handshakes++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://localhost:${(server.address() as net.AddressInfo).port}`;
    const client = createEgressClient({ allowPrivateNetworks: true, tls: { ca: ca.caCert } });
    try {
      for (let i = 0; i < 10; i++) expect((await client.request(get(`${url}/one/${i}`))).status).toBe(204);
      // undici frees a connection one event-loop turn after its answer, so the next request may open a second one.
      expect(handshakes).toBeLessThanOrEqual(2);

      // More requests at once than the bound: the rest wait for a connection instead of opening one.
      const burst = Array.from({ length: MAX_CONNECTIONS_PER_HOST + 8 }, () => client.request(get(`${url}/hold`)));
      await waitFor(() => held.length === MAX_CONNECTIONS_PER_HOST, { what: 'as many held requests as the bound' });
      expect(handshakes).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_HOST);
      holding = false;
      held.splice(0).forEach((answer) => answer());
      for (const res of await Promise.all(burst)) expect(res.status).toBe(204);
      expect(handshakes).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_HOST);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
