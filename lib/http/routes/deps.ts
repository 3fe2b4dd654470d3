import type { Config } from '../../config.ts';
import type { Log } from '../../log.ts';
import type { PoolAdmin } from '../../pools/admin.ts';
import type { PoolRegistry } from '../../pools/registry.ts';
import type { SandboxProcesses } from '../../sandboxes/processes.ts';
import type { SandboxOperations } from '../../sandboxes/sandbox-operations.ts';
import type { SandboxService } from '../../sandboxes/service.ts';
import type { ReconcileReport } from '../../scheduler/reconcile.ts';
import type { Store } from '../../store/port.ts';
import type { Tenancy } from '../../tenancy/tenancy.ts';
import type { Webhooks } from '../../webhooks/service.ts';

/** The services the route handlers call: the composition root (lib/control-plane.ts) builds them. */
export interface RouteDeps {
  tenancy: Tenancy;
  webhooks: Webhooks;
  sandboxes: SandboxService;
  operations: SandboxOperations;
  processes: SandboxProcesses;
  poolAdmin: PoolAdmin;
  pools: PoolRegistry;
  store: Store;
  config: Config;
  log: Log;
  reconcile: () => Promise<ReconcileReport>;
}
