import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { classifyAddress } from './address-policy';

/** One address of a host, as `dns.lookup` reports it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a host name resolves to, in the order the resolver gives them. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), asked for every family at once so
 * the whole answer is checked, not only the part one connection attempt would use.
 */
export const systemResolver: HostResolver = async (hostname) => {
  const answer = await dns.promises.lookup(hostname, { all: true });
  return answer.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export const BLOCKED = 'ERR_EGRESS_BLOCKED';

export class BlockedAddressError extends Error {
  readonly code = BLOCKED;
}

export function blockedMessage(host: string): string {
  return `destination not allowed: ${host} resolves to a private, loopback, link-local or reserved address`;
}

/**
 * A `lookup` for `net.connect` (undici passes it through): resolves once, refuses the whole
 * answer when any address in it is refused, and hands the socket exactly the addresses it
 * checked, so no second resolution (DNS rebinding) can swap in another target.
 */
export function checkedLookup(resolve: HostResolver, allowPrivateNetworks: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    Promise.resolve(hostname).then(resolve).then(
      (answer) => {
        if (!allowPrivateNetworks && answer.some((a) => !classifyAddress(a.address).allowed)) {
          return callback(new BlockedAddressError(blockedMessage(hostname)), []);
        }
        // net.connect may ask for one family; the check above still covered every address.
        const usable = family === 4 || family === 6 ? answer.filter((a) => a.family === family) : answer;
        const first = usable[0];
        if (!first) {
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
        }
        if (options.all) return callback(null, usable);
        callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
}
