import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A throwaway certificate authority and a `localhost`/`127.0.0.1` server certificate it signed. */
export interface TestCa {
  /** PEM of the CA certificate: trust it through `NODE_EXTRA_CA_CERTS` (`caFile`) or a `ca` option. */
  caCert: string;
  caFile: string;
  serverKey: string;
  serverCert: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

let cached: TestCa | undefined;

/**
 * Creates (once per process) a CA and a server certificate with the system `openssl`, in a temp
 * directory. Tests trust the CA explicitly; TLS verification stays on.
 */
export function testCa(): TestCa {
  if (cached) return cached;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-ca-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3', '-subj', '/CN=Task API Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir);
  fs.writeFileSync(
    path.join(dir, 'server.ext'),
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt',
    '-days', '3', '-extfile', 'server.ext'], dir);
  const read = (f: string) => fs.readFileSync(path.join(dir, f), 'utf8');
  cached = { caCert: read('ca.crt'), caFile: path.join(dir, 'ca.crt'), serverKey: read('server.key'), serverCert: read('server.crt') };
  return cached;
}
