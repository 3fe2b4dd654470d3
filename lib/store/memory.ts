import type { AuditEvent } from '../audit/chain.ts';
import { memoryAudit } from './audit/memory.ts';
import { memoryLeases } from './leases/memory.ts';
import { MemoryState } from './memory-state.ts';
import { memoryPools } from './pools/memory.ts';
import type { Store } from './port.ts';
import { memorySandboxes } from './sandboxes/memory.ts';
import { memorySnapshots } from './snapshots/memory.ts';
import { memoryTenancy } from './tenancy/memory.ts';
import { memoryWarm } from './warm/memory.ts';
import { memoryWebhooks } from './webhooks/memory.ts';

export interface MemoryStore extends Store {
  /** Test hook: the stored events of a chain, for tampering tests. */
  rawAudit(orgId: string): AuditEvent[];
}

/**
 * The in-memory store for dev mode and tests: each aggregate's memory part (lib/store/<aggregate>/memory.ts)
 * over one shared state. `onLinking` sees every event as it is chained (here, as it is written): the
 * local event hook.
 */
export function memoryStore(
  options: { now?: () => Date; onLinking?: (events: AuditEvent[]) => Promise<void> } = {},
): MemoryStore {
  const s = new MemoryState(options);
  return {
    ...memoryTenancy(s),
    ...memoryWebhooks(s),
    ...memoryPools(s),
    ...memorySandboxes(s),
    ...memorySnapshots(s),
    ...memoryAudit(s),
    ...memoryLeases(s),
    ...memoryWarm(s),
    rawAudit: (orgId) => s.audit.get(orgId) ?? [],
  };
}
