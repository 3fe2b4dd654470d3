import { parseConfig } from '../lib/config.ts';
import { apiVersion, createControlPlane } from '../lib/control-plane.ts';
import { openApiDocument } from '../lib/http/openapi.ts';
import { silentLog } from '../lib/log.ts';
import { PoolRegistry } from '../lib/pools/registry.ts';
import { memoryStore } from '../lib/store/memory.ts';

/** The API's OpenAPI document as committed in docs/openapi.json: built from the router's route table. */
export function currentOpenApiDocument(): Record<string, unknown> {
  const plane = createControlPlane({
    config: parseConfig({}),
    store: memoryStore(),
    queue: { send: async () => {}, changeVisibility: async () => {} },
    pools: new PoolRegistry([]),
    log: silentLog,
  });
  return openApiDocument(plane.routes, apiVersion);
}

export function openApiText(): string {
  return `${JSON.stringify(currentOpenApiDocument(), null, 2)}\n`;
}
