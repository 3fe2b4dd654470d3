import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { newUlid } from '../../ids.ts';
import { installationChain } from '../audit/port.ts';
import { copy, type MemoryState } from '../memory-state.ts';
import { type PlacementPolicy, type PoolRecord, type PoolView, withDownMarks } from '../records.ts';
import type { PoolStore, PoolsState } from './port.ts';

/** The pools aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memoryPools(s: MemoryState): PoolStore {
  const part: PoolStore = {
    async putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void> {
      const exists = s.pools.has(pool.name);
      if (mode === 'create' && exists)
        throw errors.conflict(`pool ${pool.name} already exists`, { pool: pool.name });
      if (mode === 'replace' && !exists) throw errors.notFound('pool', pool.name);
      s.pools.set(pool.name, structuredClone(pool));
      s.poolsVersion = newUlid();
      s.append(installationChain, audit);
    },

    async getPool(name: string): Promise<PoolRecord | undefined> {
      return copy(s.pools.get(name));
    },

    async listPools(): Promise<PoolRecord[]> {
      return [...s.pools.values()].map((pool) => structuredClone(pool));
    },

    async deletePool(name: string, audit: AuditInput): Promise<void> {
      if (!s.pools.delete(name)) throw errors.notFound('pool', name);
      s.poolViews.delete(name);
      s.poolDownMarks.delete(name);
      s.poolsVersion = newUlid();
      s.append(installationChain, audit);
    },

    async putPoolView(view: PoolView): Promise<void> {
      const { downSince: _since, downReason: _reason, ...probed } = view;
      s.poolViews.set(view.pool, structuredClone({ ...probed, downSince: null, downReason: null }));
      s.poolsVersion = newUlid();
    },

    async markPoolDown(pool: string, at: string, reason: string): Promise<void> {
      const known = s.poolDownMarks.get(pool);
      if (known === undefined || known.at < at) {
        s.poolDownMarks.set(pool, { pool, at, reason });
        s.poolsVersion = newUlid();
      }
    },

    async listPoolViews(): Promise<PoolView[]> {
      return structuredClone(withDownMarks([...s.poolViews.values()], s.poolDownMarks));
    },

    async getPolicy(): Promise<PlacementPolicy | undefined> {
      return copy(s.policy);
    },

    async putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void> {
      s.policy = structuredClone(policy);
      s.poolsVersion = newUlid();
      s.append(installationChain, audit);
    },

    async readPools(): Promise<PoolsState> {
      return {
        pools: await part.listPools(),
        views: await part.listPoolViews(),
        policy: await part.getPolicy(),
        version: s.poolsVersion,
      };
    },

    async getPoolUsage(pool: string): Promise<number> {
      return s.poolUsage.get(pool) ?? 0;
    },
  };
  return part;
}
