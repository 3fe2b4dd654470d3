import type { RouteDefinition } from './types.ts';

/**
 * Every status a route can answer: those its declaration names (its success and its domain's refusals),
 * and those the router itself answers for any route of its shape, so the document and the router's
 * response check cannot leave one out:
 * - 400 where there is a path, query or body to validate, or a JSON body to parse;
 * - 401 (no key, or not a valid one) and 403 (the other kind of key) where a key is required;
 * - 404 where the path names an object; 413 where there is a body;
 * - 500 everywhere (an internal error, masked).
 */
export function documentedStatuses(route: RouteDefinition): number[] {
  const statuses = new Set(Object.keys(route.responses).map(Number));
  if (
    route.params !== undefined ||
    route.query !== undefined ||
    route.body !== undefined ||
    route.rawBody !== undefined
  )
    statuses.add(400);
  if (route.auth !== 'none') {
    statuses.add(401);
    statuses.add(403);
  }
  if (route.params !== undefined) statuses.add(404);
  if (route.body !== undefined || route.rawBody !== undefined) statuses.add(413);
  statuses.add(500);
  return [...statuses].sort((a, b) => a - b);
}
