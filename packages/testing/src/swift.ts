// A real S3-compatible server for tests: OpenStack Swift with its s3api middleware (tempauth), one
// node, everything under a temporary folder, on free ports. Recipe: ../shared/S3-LOCAL.md. Nothing is
// installed here: .ci/run installs the Debian packages (see SWIFT_PACKAGES).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { S3StoreOptions } from '@taskapi/file-store';
import { createS3Client } from '@taskapi/file-store/src/s3-store';
import { freePort } from './free-port';
import { waitFor } from './wait';

const run = promisify(execFile);

export const SWIFT_PACKAGES = 'swift-proxy swift-account swift-container swift-object memcached';
const BINARIES = ['/usr/bin/memcached', '/usr/bin/swift-ring-builder', ...['proxy', 'account', 'container', 'object'].map((s) => `/usr/bin/swift-${s}-server`)];

/** tempauth's `test:tester` user (`user_test_tester = testing .admin`). */
export const SWIFT_CREDENTIALS = { accessKeyId: 'test:tester', secretAccessKey: 'testing' } as const;

export interface SwiftServer {
  /** S3 endpoint, e.g. http://127.0.0.1:41234 */
  endpoint: string;
  region: 'us-east-1';
  credentials: typeof SWIFT_CREDENTIALS;
  /** The environment a service needs to use `bucket` on this server (STORAGE_DRIVER=s3). */
  env(bucket: string): Record<string, string>;
  /** Store options for `createS3Store`. */
  storeOptions(bucket: string): S3StoreOptions;
  /** A client with the operator's rights (creates and empties buckets). */
  client: S3Client;
  /** Creates a bucket, as the operator would. */
  createBucket(name: string): Promise<void>;
  /** Empties and deletes a bucket. */
  deleteBucket(name: string): Promise<void>;
  /** Stops exactly the processes this call started and removes its folder. */
  stop(): Promise<void>;
}

function serverConf(dir: string, name: string, port: number, body: string): string {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
workers = 0
user = ${os.userInfo().username}
swift_dir = ${dir}/etc
devices = ${dir}/srv/node
mount_check = false
disable_fallocate = true
log_name = ${name}
${body}`;
}

const PROXY_PIPELINE = `
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo versioned_writes proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = true

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
user_admin_admin = admin .admin .reseller_admin
user_test_tester = testing .admin
${['catch_errors', 'gatekeeper', 'healthcheck', 'listing_formats', 'copy', 'slo', 'dlo', 'versioned_writes'].map((f) => `\n[filter:${f}]\nuse = egg:swift#${f}\n`).join('')}
[filter:proxy-logging]
use = egg:swift#proxy_logging
`;

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return res.status < 500;
  } catch {
    return false;
  }
}

/**
 * Configures and starts Swift (memcached, account, container, object and proxy servers) under a new
 * temporary folder on free ports, and waits until it serves S3 requests (3-7 s here). Fails with a
 * clear message when the Debian packages are missing.
 */
export async function startSwift(): Promise<SwiftServer> {
  const missing = BINARIES.filter((b) => !fs.existsSync(b));
  if (missing.length > 0) {
    throw new Error(
      `OpenStack Swift is not installed (missing ${missing.join(', ')}). Install it as root: ` +
        `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${SWIFT_PACKAGES} (.ci/run does)`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-swift-'));
  for (const sub of ['etc', 'log', 'srv/node/d1']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  const [memcachedPort, proxyPort, accountPort, containerPort, objectPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const ports = { account: accountPort as number, container: containerPort as number, object: objectPort as number };

  fs.writeFileSync(
    path.join(dir, 'etc/proxy-server.conf'),
    serverConf(dir, 'proxy-server', proxyPort as number, PROXY_PIPELINE) + `\n[filter:cache]\nuse = egg:swift#memcache\nmemcache_servers = 127.0.0.1:${memcachedPort}\n`,
  );
  for (const [kind, port] of Object.entries(ports)) {
    fs.writeFileSync(
      path.join(dir, `etc/${kind}-server.conf`),
      serverConf(dir, `${kind}-server`, port, `\n[pipeline:main]\npipeline = ${kind}-server\n\n[app:${kind}-server]\nuse = egg:swift#${kind}\n`),
    );
    // Rings record the servers' ports, so they are built after the ports are chosen.
    const builder = path.join(dir, `etc/${kind}.builder`);
    await run('/usr/bin/swift-ring-builder', [builder, 'create', '10', '1', '1']);
    await run('/usr/bin/swift-ring-builder', [builder, 'add', `r1z1-127.0.0.1:${port}/d1`, '100']);
    await run('/usr/bin/swift-ring-builder', [builder, 'rebalance']);
  }

  const children: ChildProcess[] = [];
  const start = (name: string, command: string, args: string[]) => {
    const log = fs.openSync(path.join(dir, `log/${name}.log`), 'a');
    const child = spawn(command, args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    children.push(child);
  };
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    start('memcached', '/usr/bin/memcached', ['-u', os.userInfo().username, '-l', '127.0.0.1', '-p', String(memcachedPort), '-m', '64', '-U', '0']);
    for (const kind of ['account', 'container', 'object', 'proxy']) {
      start(kind, `/usr/bin/swift-${kind}-server`, [path.join(dir, `etc/${kind}-server.conf`), '--verbose']);
    }
    // With workers = 0 each server opens its port only once loaded (about 3 s, more when busy).
    await waitFor(
      async () => {
        const exited = children.find((c) => c.exitCode !== null);
        if (exited) throw new Error(`a Swift process exited (code ${exited.exitCode}); logs in ${dir}/log`);
        const all = await Promise.all([`http://127.0.0.1:${proxyPort}/healthcheck`, ...Object.values(ports).map((p) => `http://127.0.0.1:${p}/`)].map(answers));
        return all.every(Boolean);
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'Swift to answer' },
    );
  } catch (err) {
    await stop();
    throw err;
  }

  const endpoint = `http://127.0.0.1:${proxyPort}`;
  const storeOptions = (bucket: string): S3StoreOptions => ({ bucket, region: 'us-east-1', endpoint, forcePathStyle: true, credentials: SWIFT_CREDENTIALS });
  const client = createS3Client(storeOptions('unused'));
  return {
    endpoint,
    region: 'us-east-1',
    credentials: SWIFT_CREDENTIALS,
    client,
    storeOptions,
    env: (bucket) => ({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: SWIFT_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: SWIFT_CREDENTIALS.secretAccessKey,
    }),
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async deleteBucket(name) {
      for (;;) {
        const listed = await client.send(new ListObjectsV2Command({ Bucket: name }));
        const keys = (listed.Contents ?? []).map((o) => ({ Key: o.Key }));
        if (keys.length === 0) break;
        await client.send(new DeleteObjectsCommand({ Bucket: name, Delete: { Objects: keys } }));
      }
      await client.send(new DeleteBucketCommand({ Bucket: name }));
    },
    async stop() {
      client.destroy();
      await stop();
    },
  };
}
