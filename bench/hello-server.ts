// The baseline: a bare Express hello-world route, same Node and Express as the API; and, for
// context only, the same answer from Node's http module without Express.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

const app = express();
app.get('/hello', (_req, res) => {
  res.json({ hello: 'world' });
});
const body = JSON.stringify({ hello: 'world' });
const bare = http.createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
const server = app.listen(0, '127.0.0.1', () => {
  bare.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as AddressInfo).port} ${(bare.address() as AddressInfo).port}\n`);
  });
});
process.on('SIGTERM', () => server.close(() => bare.close(() => process.exit(0))));
