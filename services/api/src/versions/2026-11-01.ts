import type { ApiVersionChange } from './version-change';

/** The first dated version: the contract as it stood when versions were introduced. Nothing to transform. */
export const v20261101: ApiVersionChange = {
  version: '2026-11-01',
  summary: 'The first dated version: the API as documented in docs/api.md when versioning began.',
};
