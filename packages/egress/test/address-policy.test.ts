// Every special-purpose range a customer-supplied URL must not reach, and the public addresses it
// may, with the range ipaddr.js (and our IPv6 rules on top) names for each.
import { classifyAddress, isPublicAddress } from '../src';

type Row = [address: string, allowed: boolean, range: string];

const ipv4: Row[] = [
  ['8.8.8.8', true, 'unicast'],
  ['1.1.1.1', true, 'unicast'],
  ['93.184.216.34', true, 'unicast'],
  ['172.32.0.1', true, 'unicast'], // just past 172.16.0.0/12
  ['100.128.0.1', true, 'unicast'], // just past 100.64.0.0/10
  ['0.0.0.0', false, 'unspecified'],
  ['0.1.2.3', false, 'unspecified'], // "this network", 0.0.0.0/8
  ['127.0.0.1', false, 'loopback'],
  ['127.255.255.254', false, 'loopback'],
  ['10.0.0.1', false, 'private'],
  ['172.16.0.1', false, 'private'],
  ['172.31.255.255', false, 'private'],
  ['192.168.1.1', false, 'private'],
  ['100.64.0.1', false, 'carrierGradeNat'],
  ['100.127.255.254', false, 'carrierGradeNat'],
  ['169.254.169.254', false, 'linkLocal'], // cloud metadata
  ['169.254.0.1', false, 'linkLocal'],
  ['192.0.0.170', false, 'reserved'], // IETF protocol assignments (NAT64 discovery)
  ['192.0.2.1', false, 'reserved'], // documentation TEST-NET-1
  ['198.51.100.1', false, 'reserved'], // TEST-NET-2
  ['203.0.113.1', false, 'reserved'], // TEST-NET-3
  ['192.88.99.1', false, 'reserved'], // 6to4 relay anycast
  ['198.18.0.1', false, 'reserved'], // benchmarking 198.18.0.0/15
  ['198.19.255.254', false, 'reserved'],
  ['240.0.0.1', false, 'reserved'], // class E
  ['255.255.255.255', false, 'broadcast'],
  ['224.0.0.1', false, 'multicast'],
  ['239.255.255.250', false, 'multicast'],
  ['192.31.196.1', false, 'as112'],
  ['192.175.48.1', false, 'as112'],
  ['192.52.193.1', false, 'amt'],
];

const ipv6: Row[] = [
  ['2606:4700:4700::1111', true, 'unicast'],
  ['2a00:1450:4001:82b::200e', true, 'unicast'],
  ['::', false, 'unspecified'],
  ['::1', false, 'loopback'],
  ['fe80::1', false, 'linkLocal'],
  ['fe80::1%eth0', false, 'linkLocal'], // with a zone id, as a resolver may answer
  ['fc00::1', false, 'uniqueLocal'],
  ['fd12:3456:789a::1', false, 'uniqueLocal'],
  ['fec0::1', false, 'deprecatedSiteLocal'],
  ['ff02::1', false, 'multicast'],
  ['ff05::1:3', false, 'multicast'],
  ['100::1', false, 'discard'],
  ['2001:db8::1', false, 'reserved'], // documentation
  ['3fff::1', false, 'reserved'], // documentation, RFC 9637
  ['2001:2::1', false, 'benchmarking'],
  ['2001:3::1', false, 'amt'],
  ['2001:4:112::1', false, 'as112v6'],
  ['2001:20::1', false, 'orchid2'],
  ['5f00::1', false, 'segmentRouting'],
  ['4000::1', false, 'reserved'], // outside 2000::/3: unassigned
  ['e000::1', false, 'reserved'],
  // IPv4-mapped: the embedded address decides (the socket connects to it over IPv4).
  ['::ffff:127.0.0.1', false, 'ipv4Mapped → loopback'],
  ['::ffff:7f00:1', false, 'ipv4Mapped → loopback'],
  ['0:0:0:0:0:ffff:a00:1', false, 'ipv4Mapped → private'],
  ['::ffff:169.254.169.254', false, 'ipv4Mapped → linkLocal'],
  ['::ffff:10.0.0.1%eth0', false, 'ipv4Mapped → private'],
  ['::ffff:8.8.8.8', true, 'ipv4Mapped → unicast'],
  // IPv4-compatible (deprecated, RFC 4291): refused whatever it embeds.
  ['::127.0.0.1', false, 'ipv4Compatible'],
  ['::7f00:1', false, 'ipv4Compatible'],
  ['::10.0.0.1', false, 'ipv4Compatible'],
  ['::8.8.8.8', false, 'ipv4Compatible'],
  // IPv4-translated (SIIT, RFC 6145).
  ['::ffff:0:7f00:1', false, 'rfc6145'],
  ['::ffff:0:8.8.8.8', false, 'rfc6145'],
  // 6to4 (deprecated, RFC 7526): refused whatever it embeds.
  ['2002:7f00:1::', false, '6to4'],
  ['2002:c0a8:101::1', false, '6to4'],
  ['2002:808:808::1', false, '6to4'],
  // NAT64 well-known prefix: the embedded address decides (DNS64 answers with these).
  ['64:ff9b::127.0.0.1', false, 'rfc6052 → loopback'],
  ['64:ff9b::7f00:1', false, 'rfc6052 → loopback'],
  ['64:ff9b::a00:1', false, 'rfc6052 → private'],
  ['64:ff9b::169.254.169.254', false, 'rfc6052 → linkLocal'],
  ['64:ff9b::100.64.0.1', false, 'rfc6052 → carrierGradeNat'],
  ['64:ff9b::8.8.8.8', true, 'rfc6052 → unicast'],
  // NAT64 local-use prefix (RFC 8215): refused whatever it embeds.
  ['64:ff9b:1::7f00:1', false, 'rfc6052'],
  ['64:ff9b:1:808:800::', false, 'rfc6052'],
  ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', false, 'rfc6052'],
  // Teredo (RFC 4380): refused whatever client address it carries.
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false, 'teredo'],
  ['2001::1', false, 'teredo'],
];

// Not addresses a resolver answers: loose numeric spellings, names, URL host syntax.
const invalid: string[] = ['127.1', '0x7f.1', '2130706433', '0177.0.0.1', '010.0.0.1', '::ffff:010.0.0.1', '1.2.3.4.5', '256.0.0.1', 'localhost', '[::1]', ''];

describe('address policy (ranges from ipaddr.js)', () => {
  it.each(ipv4)('IPv4 %s → allowed %s (%s)', (address, allowed, range) => {
    expect(classifyAddress(address)).toEqual({ allowed, range });
    expect(isPublicAddress(address)).toBe(allowed);
  });

  it.each(ipv6)('IPv6 %s → allowed %s (%s)', (address, allowed, range) => {
    expect(classifyAddress(address)).toEqual({ allowed, range });
    expect(isPublicAddress(address)).toBe(allowed);
  });

  it.each(invalid)('%j is not an address: refused', (address) => {
    expect(classifyAddress(address)).toEqual({ allowed: false, range: 'invalid' });
  });
});
