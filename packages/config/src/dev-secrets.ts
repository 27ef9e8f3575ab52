import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config-error';

/** The development secrets file: its keys are the variables it stands in for. */
export interface DevSecrets {
  JWT_SECRET: string;
  SECRETS_KEY: string;
  ADMIN_USER: string;
  ADMIN_PASSWORD: string;
}

const DEV_ADMIN_USER = 'admin';

/**
 * Development only: secrets generated once and kept in a git-ignored file, so that every local
 * process (api, worker, dispatcher) and every restart share them.
 */
export function devSecrets(file: string): DevSecrets {
  const abs = path.resolve(file);
  const fresh: DevSecrets = {
    JWT_SECRET: randomBytes(48).toString('base64url'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    ADMIN_USER: DEV_ADMIN_USER,
    ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
  };
  try {
    fs.writeFileSync(abs, JSON.stringify(fresh, null, 2), { flag: 'wx', mode: 0o600 });
    return fresh;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stored = JSON.parse(fs.readFileSync(abs, 'utf8')) as Partial<DevSecrets>;
  if (!stored.JWT_SECRET || !stored.SECRETS_KEY) throw new ConfigError(`${abs} is incomplete; delete it to regenerate`);
  if (stored.ADMIN_USER && stored.ADMIN_PASSWORD) return stored as DevSecrets;
  // A file from before the Bull Board login was generated. Its SECRETS_KEY must survive (stored keys
  // depend on it), so the login is added in place. Processes starting together may all get here:
  // deriving the password from the stored secret, rather than drawing a random one, makes every
  // one of them compute and write the same file, so none is left holding a password the file lost.
  const upgraded: DevSecrets = {
    JWT_SECRET: stored.JWT_SECRET,
    SECRETS_KEY: stored.SECRETS_KEY,
    ADMIN_USER: DEV_ADMIN_USER,
    ADMIN_PASSWORD: createHmac('sha256', stored.JWT_SECRET).update('bull-board admin password').digest('base64url').slice(0, 24),
  };
  const tmp = `${abs}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(upgraded, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, abs);
  return upgraded;
}
