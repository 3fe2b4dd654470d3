import type { Config } from './config.ts';
import { type ConsoleAssets, consolePrefix } from './console/assets.ts';
import { e2bPrefix, e2bStreamedRoutes, sandboxHostMatcher } from './e2b/surface.ts';
import { createRouter } from './http/router.ts';
import { type RouteDeps, restRoutes } from './http/routes/index.ts';
import { openApiRoute } from './http/routes/system.ts';
import { type StreamedRoute, streamedRoutesOf } from './http/streamed-routes.ts';
import type { HttpRequest, HttpResponse, RouteDefinition } from './http/types.ts';
import type { Log } from './log.ts';
import { mcpRoutes } from './mcp/endpoint.ts';
import { once } from './once.ts';
import { PoolAdmin } from './pools/admin.ts';
import type { PoolRegistry } from './pools/registry.ts';
import type { DeadLetterSource, WorkQueue } from './queue/port.ts';
import { SandboxProcesses } from './sandboxes/processes.ts';
import { SandboxOperations } from './sandboxes/sandbox-operations.ts';
import { SandboxService } from './sandboxes/service.ts';
import { reconcile } from './scheduler/reconcile.ts';
import type { Store } from './store/port.ts';
import { createAuthenticator } from './tenancy/auth.ts';
import { Tenancy } from './tenancy/tenancy.ts';
import { Webhooks } from './webhooks/service.ts';

export interface ControlPlaneDeps {
  config: Config;
  store: Store;
  queue: WorkQueue;
  /** The work queues' dead-letter queues, which the sweep drains. */
  deadLetters?: DeadLetterSource;
  pools: PoolRegistry;
  log: Log;
  /** The bootstrap admin key; absent in functions that serve no HTTP (the workers never see it). */
  adminKey?: string;
  now?: () => Date;
  /** Check response bodies against the route schemas (tests and the local runtime). */
  validateResponses?: boolean;
  /** The web console's built files, served under /console (lib/console/serve.ts); absent: not served. */
  consoleAssets?: ConsoleAssets;
}

/** The API's version, in the OpenAPI document. */
export const apiVersion = '0.1.0';

export interface ControlPlane extends ControlPlaneDeps {
  /** The route table the router serves (the OpenAPI document is generated from it). */
  routes: RouteDefinition[];
  /**
   * The routes served by the response-streaming function (the route table's `streamed` ones and the E2B
   * facade's): the CDK app and the local runtime route them from this list.
   */
  streamedRoutes: StreamedRoute[];
  tenancy: Tenancy;
  sandboxes: SandboxService;
  operations: SandboxOperations;
  poolAdmin: PoolAdmin;
  handleHttp(request: HttpRequest): Promise<HttpResponse>;
}

/** Wires the domain services from their ports. Functions and the local runtime both start here. */
export function createControlPlane(deps: ControlPlaneDeps): ControlPlane {
  const sandboxes = new SandboxService(deps);
  const tenancy = new Tenancy(deps);
  const operations = new SandboxOperations(deps, sandboxes);
  const processes = new SandboxProcesses(deps, sandboxes);
  const reconcileNow = () => reconcile(deps);
  const poolAdmin = new PoolAdmin(deps);
  const routeDeps: RouteDeps = {
    tenancy,
    webhooks: new Webhooks(deps),
    sandboxes,
    operations,
    processes,
    poolAdmin,
    pools: deps.pools,
    store: deps.store,
    config: deps.config,
    log: deps.log,
    reconcile: reconcileNow,
  };
  // The route table: REST, the MCP endpoint (its tools are REST routes), the OpenAPI document of all.
  const rest = restRoutes(routeDeps);
  const routes = [...rest, ...mcpRoutes(routeDeps, rest), openApiRoute()];
  const authenticator = createAuthenticator(deps.store, deps.adminKey);
  const handleApi = createRouter(routes, {
    authenticator,
    log: deps.log,
    validateResponses: deps.validateResponses ?? false,
  });
  // The E2B-compatible API lives beside the router, under its own prefix, with E2B's own error bodies. It is
  // imported on the first request under the prefix: a container serving only REST never compiles it.
  const e2bFacade = once(async () =>
    (await import('./e2b/facade.ts')).createE2bFacade({
      sandboxes,
      operations,
      processes,
      authenticator,
      templates: deps.config.templates.map((template) => template.name),
      templateMap: deps.config.e2b.templates,
      sandboxDomain: deps.config.e2b.sandboxDomain,
      createWaitMs: deps.config.api.e2bCreateWaitSeconds * 1000,
      allowedPools: deps.config.e2b.allowedPools,
      log: deps.log,
    }),
  );
  // The console's files, beside the API like the facade: imported on the first request under its prefix.
  const webConsole = once(async () =>
    (await import('./console/serve.ts')).createConsoleHandler(deps.consoleAssets),
  );
  const sandboxHost = sandboxHostMatcher(deps.config.e2b.sandboxDomain);
  const handleHttp = async (request: HttpRequest) => {
    // `<port>-<sandboxId>.<domain>`: the facade's header routing, from the host.
    const host = sandboxHost(request.headers.host);
    if (host !== undefined)
      return (await e2bFacade())({
        ...request,
        path: `${e2bPrefix}${request.path}`,
        headers: { ...request.headers, 'e2b-sandbox-id': host.sandboxId, 'e2b-sandbox-port': host.port },
      });
    if (request.path === consolePrefix || request.path.startsWith(`${consolePrefix}/`))
      return (await webConsole())(request);
    return request.path === e2bPrefix || request.path.startsWith(`${e2bPrefix}/`)
      ? (await e2bFacade())(request)
      : handleApi(request);
  };
  const streamedRoutes = [...streamedRoutesOf(routes), ...e2bStreamedRoutes];
  return { ...deps, tenancy, sandboxes, operations, poolAdmin, routes, streamedRoutes, handleHttp };
}
