import type { AuditInput } from '../../audit/chain.ts';
import type { PlacementPolicy, PoolRecord, PoolView } from '../records.ts';

/**
 * The pools aggregate: pools registered at runtime, probed views, down marks, the placement policy
 * and each pool's slot count, all versioned together.
 */
export interface PoolStore {
  /** Pools registered at runtime (audited in the installation chain); `create` fails with conflict on a taken name. */
  putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void>;

  getPool(name: string): Promise<PoolRecord | undefined>;

  listPools(): Promise<PoolRecord[]>;

  deletePool(name: string, audit: AuditInput): Promise<void>;

  /** Stores a probe's view; the pool's down mark is kept apart and never overwritten by it. */
  putPoolView(view: PoolView): Promise<void>;

  /**
   * An adapter error said the pool's backend is down (provider_unavailable): every container sees the pool
   * unhealthy from its next sync until a probe that started after `at` succeeds. Marks only move forward.
   */
  markPoolDown(pool: string, at: string, reason: string): Promise<void>;

  /** Every probed view, with the pool's latest down mark folded in (downSince, downReason). */
  listPoolViews(): Promise<PoolView[]>;

  getPolicy(): Promise<PlacementPolicy | undefined>;

  putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void>;

  /**
   * Runtime pools, their views (down marks folded in) and the stored policy, in one read; `version`
   * changes with every write among them (pools, policy, probed views, down marks), so a container that
   * holds this version knows without reading them again that nothing has changed.
   */
  readPools(): Promise<PoolsState>;

  /** Active slots taken on a pool. */
  getPoolUsage(pool: string): Promise<number>;
}

export interface PoolsState {
  pools: PoolRecord[];
  views: PoolView[];
  policy: PlacementPolicy | undefined;
  /** null until the first pool or policy change. */
  version: string | null;
}
