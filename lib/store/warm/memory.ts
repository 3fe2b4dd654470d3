import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { poolAtLimit } from '../errors.ts';
import { copy, type MemoryState } from '../memory-state.ts';
import type { SandboxRecord, WarmRecord } from '../records.ts';
import { remember, replayOf } from '../sandboxes/memory.ts';
import type { IdempotencyClaim } from '../sandboxes/port.ts';
import { claimEffects } from './claim-effects.ts';
import type { WarmClaimResult, WarmStore } from './port.ts';

/** The warm instances aggregate in memory; each call checks everything before it writes, with no await between. */
export function memoryWarm(s: MemoryState): WarmStore {
  const slot = (pool: string, change: number) => s.poolUsage.set(pool, (s.poolUsage.get(pool) ?? 0) + change);
  const current = (record: WarmRecord) => {
    const stored = s.warm.get(record.id);
    return stored !== undefined && stored.version === record.version ? stored : undefined;
  };
  return {
    async putWarm(record: WarmRecord, options: { poolLimit?: number } = {}): Promise<void> {
      if (s.warm.has(record.id)) throw errors.conflict(`warm instance ${record.id} already exists`);
      const limit = options.poolLimit ?? 0;
      if (limit > 0 && (s.poolUsage.get(record.pool) ?? 0) + 1 > limit) throw poolAtLimit(record.pool, limit);
      slot(record.pool, 1);
      s.warm.set(record.id, structuredClone(record));
    },

    async updateWarm(record, patch): Promise<WarmRecord> {
      const stored = current(record);
      if (stored === undefined) throw errors.conflict(`warm instance ${record.id} changed since it was read`);
      const next = { ...stored, ...structuredClone(patch), version: stored.version + 1 };
      s.warm.set(next.id, next);
      return structuredClone(next);
    },

    async removeWarm(record: WarmRecord): Promise<boolean> {
      if (current(record) === undefined) return false;
      s.warm.delete(record.id);
      slot(record.pool, -1);
      return true;
    },

    async listWarm(pool: string): Promise<WarmRecord[]> {
      return [...s.warm.values()]
        .filter((record) => record.pool === pool)
        .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))
        .map((record) => structuredClone(record));
    },

    async claimWarm(
      warm: WarmRecord,
      sandbox: SandboxRecord,
      audit: AuditInput,
      idempotency?: IdempotencyClaim,
    ): Promise<WarmClaimResult> {
      if (!s.orgs.has(sandbox.orgId)) throw errors.notFound('org', sandbox.orgId);
      const first = replayOf(s, sandbox.orgId, idempotency);
      if (first !== undefined) return { kind: 'replayed', sandbox: first };
      const stored = current(warm);
      if (stored === undefined || stored.status !== 'ready') return { kind: 'taken' };
      if (s.sandboxes.has(sandbox.id)) throw errors.conflict(`sandbox ${sandbox.id} already exists`);
      s.applyEffects(claimEffects(sandbox));
      s.warm.delete(warm.id);
      s.sandboxes.set(sandbox.id, structuredClone(sandbox));
      remember(s, sandbox, idempotency);
      s.append(sandbox.orgId, audit);
      return { kind: 'claimed', sandbox: copy(sandbox) ?? sandbox };
    },
  };
}
