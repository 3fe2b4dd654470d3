import { createAuthenticator } from './auth.ts';
import type { Config } from './config.ts';
import { createRouter } from './http/router.ts';
import { apiRoutes } from './http/routes.ts';
import type { HttpRequest, HttpResponse } from './http/types.ts';
import type { Log } from './log.ts';
import type { PoolRegistry } from './pools.ts';
import type { DeadLetterSource, WorkQueue } from './queue/port.ts';
import { SandboxOperations } from './sandbox-operations.ts';
import { SandboxService } from './sandboxes.ts';
import { reconcile } from './scheduler/reconcile.ts';
import type { Store } from './store/port.ts';
import { Tenancy } from './tenancy.ts';

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
}

export interface ControlPlane extends ControlPlaneDeps {
  tenancy: Tenancy;
  sandboxes: SandboxService;
  operations: SandboxOperations;
  handleHttp(request: HttpRequest): Promise<HttpResponse>;
}

/** Wires the domain services from their ports. Functions and the local runtime both start here. */
export function createControlPlane(deps: ControlPlaneDeps): ControlPlane {
  const tenancy = new Tenancy(deps.store, deps.now);
  const sandboxes = new SandboxService(deps);
  const operations = new SandboxOperations(deps, sandboxes);
  const reconcileNow = () => reconcile(deps);
  const handleHttp = createRouter(
    apiRoutes({ tenancy, sandboxes, operations, store: deps.store, reconcile: reconcileNow }),
    {
      authenticator: createAuthenticator(deps.store, deps.adminKey),
      log: deps.log,
      validateResponses: deps.validateResponses ?? false,
    },
  );
  return { ...deps, tenancy, sandboxes, operations, handleHttp };
}
