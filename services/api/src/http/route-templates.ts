import type { Route } from './route';

/** Label of every request no declared route matches: one value, never the raw path (cardinality). */
export const UNMATCHED_ROUTE = 'unmatched';

interface CompiledRoute {
  method: string;
  template: string;
  pattern: RegExp;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

/** `/api/tasks/{publicId}` → a regular expression matching one path segment per parameter. */
function compile(route: Route): CompiledRoute {
  const source = route.path
    .split(/(\{\w+\})/)
    .map((part) => (/^\{\w+\}$/.test(part) ? '[^/]+' : escapeRegExp(part)))
    .join('');
  return { method: route.method.toUpperCase(), template: route.path, pattern: new RegExp(`^${source}/?$`, 'i') };
}

/**
 * The route template (`/api/tasks/{publicId}`, as the registry declares it) of a request, from its
 * method and path alone. Metrics label by it because Express's own matched route is not known for
 * every answer: authentication runs before routing below the auth scopes, so a 401 or 429 never
 * reaches the route, and a scoped router only knows its part of the path.
 */
export function routeTemplateMatcher(routes: readonly Route[]): (method: string, path: string) => string | undefined {
  const compiled = routes.map(compile);
  return (method, path) => {
    // Express answers HEAD with the GET route.
    const wanted = method === 'HEAD' ? 'GET' : method;
    return compiled.find((c) => c.method === wanted && c.pattern.test(path))?.template;
  };
}
