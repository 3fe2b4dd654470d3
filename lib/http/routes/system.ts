import * as z from '../../zod.ts';
import { openApiDocument } from '../openapi.ts';
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
 * GET /v1/openapi.json: the document generated from the same table the router validates with (the
 * table given, this route included), built on the first request.
 */
export function openApiRoute(table: RouteDefinition[], version: string): RouteDefinition {
  let document: Record<string, unknown> | undefined;
  return route({
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This API, as an OpenAPI 3.1 document generated from the schemas the router uses',
    auth: 'none',
    responses: { 200: z.record(z.string(), z.unknown()) },
    handle: async () => {
      document ??= openApiDocument(table, version);
      return { status: 200, body: document };
    },
  });
}
