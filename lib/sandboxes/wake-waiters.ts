import { describeError, type Log } from '../log.ts';
import type { WorkQueue } from '../queue/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import { type SandboxStore, waitsOnPools } from '../store/sandboxes/port.ts';

/** How many waiters one released reservation wakes, per kind. */
const wakeCount = 3;

export interface WakeDeps {
  store: SandboxStore;
  queue: WorkQueue;
  log: Log;
}

const waiting = (record: SandboxRecord) => record.status === 'queued' && record.waitingFor !== null;

/**
 * A reservation was released (terminate, stop, failure): wake the oldest sandboxes of that org waiting
 * for quota, and the oldest sandboxes of any org waiting for capacity on that pool, so the freed room is
 * used within seconds instead of at their next scheduled look. Best effort: a failure here only means
 * the waiters look again on their own schedule.
 */
export async function wakeWaiters(
  deps: WakeDeps,
  released: {
    orgId: string;
    pool: string | null;
    /** The org's count of waiting sandboxes, when the caller read it already: 0 means no one to wake. */
    orgWaiting?: number;
    /** The count of sandboxes of any org waiting on the pools, when read already: 0 means no one. */
    waitingOnPools?: number;
  },
): Promise<number> {
  try {
    const candidates = new Map<string, SandboxRecord>();
    if (released.orgWaiting !== 0) {
      const ofOrg = await deps.store.listQueued(released.orgId, 25);
      for (const record of ofOrg.filter(waiting).slice(0, wakeCount)) candidates.set(record.id, record);
    }
    if (released.pool !== null && released.waitingOnPools !== 0) {
      const pool = released.pool;
      const anyOrg = await deps.store.listSandboxesByStatus('queued', { limit: 25 });
      const forPool = anyOrg.items.filter(
        (record) =>
          waitsOnPools(record) && (record.allowedPools === null || record.allowedPools.includes(pool)),
      );
      for (const record of forPool.slice(0, wakeCount)) candidates.set(record.id, record);
    }
    for (const record of candidates.values()) {
      await deps.queue.send('provision', { sandboxId: record.id, orgId: record.orgId, wake: true });
    }
    return candidates.size;
  } catch (error) {
    deps.log.warn('could not wake waiting sandboxes; they look again on their own', {
      orgId: released.orgId,
      pool: released.pool,
      error: describeError(error),
    });
    return 0;
  }
}
