import { once } from '../../once.ts';
import * as z from '../../zod.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** What needs no key: health, and the OpenAPI document (openApiRoute). */
export function systemRoutes(_deps: RouteDeps): RouteDefinition[] {
  return [
    route({
      method: 'GET',
      path: '/v1/health',
      summary: 'Liveness of the API',
      auth: 'none',
      responses: { 200: z.object({ status: z.literal('ok') }) },
      handle: async () => ({ status: 200, body: { status: 'ok' } }),
    }),
  ];
}

/**
 * GET /v1/openapi.json: the document `npm run openapi` generates from the route table the router validates
 * with (docs/openapi.json; test/unit/http/openapi.test.ts fails while it is stale, and checks that this
 * route serves it). The route table does not depend on config, store or pools, so the build's document is
 * every deployment's. Served as built, it is imported on the first request: a container's cold start
 * carries neither the document nor zod's JSON Schema code, and the first request does not generate it.
 */
export function openApiRoute(): RouteDefinition {
  return route({
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This API, as an OpenAPI 3.1 document generated from the schemas the router uses',
    auth: 'none',
    responses: { 200: z.record(z.string(), z.unknown()) },
    handle: async () => ({ status: 200, body: (await builtDocument()).default }),
  });
}

const builtDocument = once(() => import('../../../docs/openapi.json', { with: { type: 'json' } }));
