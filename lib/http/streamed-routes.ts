import type { RouteDefinition } from './types.ts';

/** A route served by the response-streaming function: its method and its path template (`{id}` a segment). */
export interface StreamedRoute {
  method: string;
  path: string;
}

/** The routes of a table that declare `streamed`. */
export function streamedRoutesOf(table: readonly RouteDefinition[]): StreamedRoute[] {
  return table.filter((route) => route.streamed === true).map(({ method, path }) => ({ method, path }));
}

/**
 * Whether a request goes to the response-streaming function, as API Gateway decides it from the same
 * list (an explicit resource per streamed route, every other path to the buffered proxy).
 */
export function streamedRouteMatcher(
  routes: readonly StreamedRoute[],
): (method: string, path: string) => boolean {
  const compiled = routes.map(({ method, path }) => {
    const segments = path
      .split('/')
      .map((segment) =>
        /^\{\w+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      );
    return { method: method.toUpperCase(), pattern: new RegExp(`^${segments.join('/')}/?$`) };
  });
  return (method, path) =>
    compiled.some((route) => route.method === method.toUpperCase() && route.pattern.test(path));
}
