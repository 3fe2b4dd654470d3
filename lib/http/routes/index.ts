import type { RouteDefinition } from '../types.ts';
import { auditRoutes } from './audit.ts';
import type { RouteDeps } from './deps.ts';
import { poolsRoutes } from './pools.ts';
import { processRoutes } from './processes.ts';
import { operationsRoutes } from './sandbox-operations.ts';
import { sandboxesRoutes } from './sandboxes.ts';
import { snapshotsRoutes } from './snapshots.ts';
import { systemRoutes } from './system.ts';
import { tenancyRoutes } from './tenancy.ts';
import { webhookRoutes } from './webhooks.ts';

export type { RouteDeps } from './deps.ts';

/**
 * The REST routes, one file per concept; the composition root adds the endpoints built over them (MCP)
 * and the OpenAPI document last. Their order is the document's.
 */
export function restRoutes(deps: RouteDeps): RouteDefinition[] {
  return [
    ...systemRoutes(deps),
    ...tenancyRoutes(deps),
    ...webhookRoutes(deps),
    ...sandboxesRoutes(deps),
    ...operationsRoutes(deps),
    ...processRoutes(deps),
    ...snapshotsRoutes(deps),
    ...auditRoutes(deps),
    ...poolsRoutes(deps),
  ];
}
