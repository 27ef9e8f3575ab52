import type { ApiDeps } from '../../deps';
import type { ApiKeyDeps } from '../../domain/api-keys';

/** What key management needs from the process's dependencies. */
export function keyDeps(deps: ApiDeps): ApiKeyDeps {
  return { keys: deps.repos.keys, grants: deps.repos.grants, redis: deps.redis, secretsKey: deps.config.secretsKey, logger: deps.logger };
}
