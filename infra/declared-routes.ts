import { parseConfig } from '../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../lib/control-plane.ts';
import type { StreamedRoute } from '../lib/http/streamed-routes.ts';
import { silentLog } from '../lib/log.ts';
import { PoolRegistry } from '../lib/pools/registry.ts';
import { memoryStore } from '../lib/store/memory.ts';

/**
 * A control plane built only to read what its routes declare (the OpenAPI document, which routes stream):
 * the declarations do not depend on config, store or pools, so inert ones serve.
 */
export function declaredControlPlane(): ControlPlane {
  return createControlPlane({
    config: parseConfig({}),
    store: memoryStore(),
    queue: { send: async () => {}, changeVisibility: async () => {} },
    pools: new PoolRegistry([]),
    log: silentLog,
  });
}

/** The routes API Gateway and the local runtime send to the response-streaming function. */
export function declaredStreamedRoutes(): StreamedRoute[] {
  return declaredControlPlane().streamedRoutes;
}
