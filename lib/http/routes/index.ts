import type { RouteDefinition } from '../types.ts';
import { auditRoutes } from './audit.ts';
import type { RouteDeps } from './deps.ts';
import { mcpRoutes } from './mcp.ts';
import { poolsRoutes } from './pools.ts';
import { operationsRoutes } from './sandbox-operations.ts';
import { sandboxesRoutes } from './sandboxes.ts';
import { snapshotsRoutes } from './snapshots.ts';
import { openApiRoute, systemRoutes } from './system.ts';
import { tenancyRoutes } from './tenancy.ts';
import { webhookRoutes } from './webhooks.ts';

export type { RouteDeps } from './deps.ts';

/** The route table, one file per concept, the OpenAPI document last; its order is the document's. */
export function apiRoutes(deps: RouteDeps, version: string): RouteDefinition[] {
  const table = [
    ...systemRoutes(deps),
    ...tenancyRoutes(deps),
    ...webhookRoutes(deps),
    ...sandboxesRoutes(deps),
    ...operationsRoutes(deps),
    ...snapshotsRoutes(deps),
    ...auditRoutes(deps),
    ...poolsRoutes(deps),
    ...mcpRoutes(deps),
  ];
  table.push(openApiRoute(table, version));
  return table;
}
