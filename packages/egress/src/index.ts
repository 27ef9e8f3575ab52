export { classifyAddress, isPublicAddress } from './address-policy';
export type { AddressVerdict } from './address-policy';
export { createEgressClient, EgressError, MAX_CONNECTIONS_PER_HOST } from './egress-client';
export type { EgressClient, EgressErrorCode, EgressOptions, EgressRequest, EgressResponse } from './egress-client';
export type { HostResolver, ResolvedAddress } from './checked-lookup';
