import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The verdict on one IP address: `allowed` only for global unicast. `range` names why, with
 * ipaddr.js's range names (`unicast`, `loopback`, `private`, `linkLocal`, `carrierGradeNat`,
 * `uniqueLocal`, `6to4`, `teredo`, `rfc6052`, `reserved`, …); an IPv6 form that embeds an IPv4
 * address adds the embedded address's range after an arrow (`ipv4Mapped → loopback`).
 */
export interface AddressVerdict {
  allowed: boolean;
  range: string;
}

// The special-purpose ranges come from ipaddr.js (the IANA registries, kept up to date upstream).
// Its 2.x knows RFC 8215 (64:ff9b:1::/48), RFC 9637 (3fff::/20) and more; 1.x, which express
// brings to the root node_modules, does not. Fail at start rather than check with a stale table.
if (ipaddr.parse('64:ff9b:1::1').range() !== 'rfc6052' || ipaddr.parse('3fff::1').range() !== 'reserved') {
  throw new Error('@taskapi/egress: ipaddr.js >= 2.5 is required (an older copy was loaded)');
}

// IANA allocates global unicast IPv6 from 2000::/3 only. Outside it, what ipaddr.js leaves as
// "unicast" is reserved or unassigned space, notably the deprecated IPv4-compatible ::a.b.c.d.
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
// NAT64 well-known prefix (RFC 6052): the translator connects to the IPv4 address in the last
// 32 bits, and DNS64 answers with such addresses for IPv4-only hosts on IPv6-only networks.
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function lastIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 {
  return new ipaddr.IPv4(v6.toByteArray().slice(12));
}

function classifyIpv4(v4: ipaddr.IPv4): AddressVerdict {
  const range = v4.range();
  return { allowed: range === 'unicast', range };
}

function classifyIpv6(v6: ipaddr.IPv6): AddressVerdict {
  const range = v6.range();
  // Where the embedding is fixed and the packet ends up at the embedded IPv4 address, that
  // address decides. Every other IPv4-embedding form is refused outright: 6to4 (2002::/16) and
  // Teredo (2001::/32) are deprecated tunnels through relays, the NAT64 local-use prefix
  // (64:ff9b:1::/48, RFC 8215) has a network-specific layout and leads into the operator's own
  // network, and SIIT (::ffff:0:a.b.c.d) never appears in a DNS answer.
  if (range === 'ipv4Mapped' || (range === 'rfc6052' && v6.match(NAT64_WELL_KNOWN))) {
    const embedded = classifyIpv4(lastIpv4(v6));
    return { allowed: embedded.allowed, range: `${range} → ${embedded.range}` };
  }
  if (range === 'unicast' && !v6.match(IPV6_GLOBAL_UNICAST)) {
    const compatible = v6.parts.slice(0, 6).every((part) => part === 0);
    return { allowed: false, range: compatible ? 'ipv4Compatible' : 'reserved' };
  }
  return { allowed: range === 'unicast', range };
}

/**
 * An IPv6 address in all-hex form, as Node's own parser (the WHATWG URL one) reads it. ipaddr.js
 * reads `::a.b.c.d` as IPv4-mapped (`::ffff:a.b.c.d`) where a socket connects to IPv4-compatible
 * `::a.b.c.d`, so it only ever sees the unambiguous form. The zone id does not change the range.
 */
function canonicalIpv6(address: string): string | null {
  try {
    return new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
}

const INVALID: AddressVerdict = { allowed: false, range: 'invalid' };

/**
 * Classifies an IP address as a resolver returns it: dotted decimal IPv4 or IPv6, optionally with
 * a zone id. Anything else, including the loose numeric spellings `127.1`, `0x7f.1` or `010.0.0.1`,
 * is refused as `invalid`: URLs are normalized before they get here, and resolvers answer in
 * canonical form.
 */
export function classifyAddress(address: string): AddressVerdict {
  const family = net.isIP(address);
  if (family === 4) return classifyIpv4(ipaddr.IPv4.parse(address));
  const v6 = family === 6 ? canonicalIpv6(address) : null;
  return v6 === null ? INVALID : classifyIpv6(ipaddr.IPv6.parse(v6));
}

/** True when `address` is a global unicast address that customer-supplied URLs may reach. */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address).allowed;
}
