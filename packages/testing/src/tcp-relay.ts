import net from 'node:net';

/** A TCP relay in front of a real server, which a test can cut (and restore) to simulate an outage. */
export interface TcpRelay {
  port: number;
  /**
   * Drops every open connection until `restore()`. New connections are accepted and closed at once
   * (`drop`: a server that dies mid-handshake) or refused outright (`refuse`: nothing listens,
   * ECONNREFUSED, as when the server is stopped).
   */
  cut(mode?: 'drop' | 'refuse'): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(targetHost: string, targetPort: number): Promise<TcpRelay> {
  const sockets = new Set<net.Socket>();
  let open = true;
  const server = net.createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => {
        sockets.delete(s);
        (s === client ? upstream : client).destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    port,
    cut(mode = 'drop') {
      open = false;
      if (mode === 'refuse' && server.listening) server.close();
      dropAll();
    },
    restore() {
      open = true;
      if (!server.listening) server.listen(port, '127.0.0.1');
    },
    async close() {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
