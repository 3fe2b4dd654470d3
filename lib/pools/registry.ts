import type { Capabilities, ExecutionAdapter } from '../adapter/port.ts';
import type { PlacementPolicy, PoolConfig } from '../config.ts';
import { errors } from '../errors.ts';
import type { PoolStore } from '../store/pools/port.ts';
import type { PoolRecord, PoolView } from '../store/records.ts';

/** A pool's settings; the adapter kind is any string so a pool stored by another build still loads. */
export type PoolSpec = Omit<PoolConfig, 'adapter'> & { adapter: string };

export interface Pool {
  /** The settings, with `features` replaced by the effective list. */
  config: PoolSpec;
  /** `features` as the operator wrote them (undefined: take what the adapter declares). */
  declaredFeatures?: string[] | undefined;
  /** Absent when this build has no adapter for the pool's kind (the seeds' E0.22 case) or it failed to build. */
  adapter: ExecutionAdapter | undefined;
  /** Why there is no adapter. */
  problem?: string;
  /** Declared limits and templates as last read; null when never read. */
  capabilities: Capabilities | null;
  /** Where the pool is defined: the config file, or the admin API (then `updatedAt` identifies the version). */
  source: 'config' | 'api';
  updatedAt?: string;
}

/** Builds a pool from its spec: the adapter, its capabilities and effective features. Throws invalid_request. */
export type PoolBuilder = (spec: PoolSpec) => Promise<Pool>;

export interface PoolRegistryOptions {
  /** Where runtime pools, refreshed views and the stored policy live. */
  store?: PoolStore;
  /** Builds runtime pools as they appear in the store. */
  build?: PoolBuilder;
  /** The policy from the config file, used until one is stored. */
  policy?: PlacementPolicy;
  /** How stale the runtime view may get before a call syncs again. */
  syncIntervalMs?: number;
  now?: () => number;
}

const defaultPolicy: PlacementPolicy = { allowExternal: false, externalPools: [] };

/**
 * The pools a control plane instance knows: the config file's, in the operator's order, then those added
 * through the admin API. Each Lambda container holds one registry and syncs it from the store at most
 * every few seconds, so a pool added through the API reaches every function without a deploy.
 *
 * Health and features are shared state, read from the store: pool-refresh's probes write each pool's
 * view, and an adapter error that means the backend is down (provider_unavailable, from any container)
 * writes a down mark that every container honours until a probe started after it succeeds. Nothing a
 * container learns from its own calls is kept only in its memory.
 */
export class PoolRegistry {
  readonly #configured: Pool[];
  readonly #runtime = new Map<string, Pool>();
  readonly #views = new Map<string, PoolView>();
  readonly #options: PoolRegistryOptions;
  #policy: PlacementPolicy;
  #policyStored = false;
  #syncedAt = Number.NEGATIVE_INFINITY;
  #syncing: Promise<void> | undefined;
  /** The store's pools version this registry last loaded (undefined: never loaded). */
  #version: string | null | undefined;

  constructor(pools: Pool[], options: PoolRegistryOptions = {}) {
    this.#configured = pools;
    this.#options = options;
    this.#policy = options.policy ?? defaultPolicy;
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  /** Loads runtime pools, views and the policy from the store, unless that was done moments ago. */
  async sync(force = false): Promise<void> {
    const store = this.#options.store;
    if (store === undefined) return;
    if (!force && this.#now() - this.#syncedAt < (this.#options.syncIntervalMs ?? 5000)) return;
    this.#syncing ??= this.#load(store).finally(() => {
      this.#syncing = undefined;
    });
    await this.#syncing;
  }

  /**
   * Syncs only if the store's pools version (read by the caller moments ago, consistently, with what it
   * reads anyway) differs from the one loaded. Every write among pools, views, down marks and the policy
   * moves the version, so an operator's change or a pool marked down rules the very next request or
   * placement, whichever container serves it, and an unchanged store costs no read.
   */
  async syncTo(version: string | null): Promise<void> {
    if (this.#options.store === undefined || (this.#version !== undefined && version === this.#version))
      return;
    await this.sync(true);
    // A load already under way may have read before the change this version stands for: once more then.
    if (this.#version !== version) await this.sync(true);
  }

  async #load(store: PoolStore): Promise<void> {
    const { pools: records, views, policy, version } = await store.readPools();
    this.#version = version;
    const seen = new Set<string>();
    for (const record of records) {
      seen.add(record.name);
      if (this.#configured.some((pool) => pool.config.name === record.name)) continue;
      const known = this.#runtime.get(record.name);
      if (known?.updatedAt === record.updatedAt) continue;
      this.#runtime.set(record.name, await this.#buildStored(record));
    }
    for (const name of this.#runtime.keys()) if (!seen.has(name)) this.#runtime.delete(name);
    this.#setViews(views);
    this.#policy = policy ?? this.#options.policy ?? defaultPolicy;
    this.#policyStored = policy !== undefined;
    this.#syncedAt = this.#now();
  }

  async #buildStored(record: PoolRecord): Promise<Pool> {
    const { createdAt: _createdAt, updatedAt, ...spec } = record;
    const build = this.#options.build;
    if (build === undefined) {
      return {
        config: spec,
        adapter: undefined,
        problem: 'no pool builder',
        capabilities: null,
        source: 'api',
        updatedAt,
      };
    }
    try {
      return { ...(await build(spec)), source: 'api', updatedAt };
    } catch (error) {
      // A stored pool that no longer builds (a kind this build lacks, a credential gone) stays listed,
      // unhealthy, with the reason: its sandboxes must stay visible.
      return {
        config: { ...spec, features: spec.features ?? [] },
        adapter: undefined,
        problem: (error as Error).message,
        capabilities: null,
        source: 'api',
        updatedAt,
      };
    }
  }

  #setViews(views: PoolView[]): void {
    this.#views.clear();
    for (const view of views) this.#views.set(view.pool, view);
  }

  /** Syncs at once when `name` is unknown here: it may have been added through the API moments ago. */
  async ensure(name: string | null): Promise<void> {
    if (name !== null && this.get(name) === undefined) await this.sync(true);
  }

  /** Builds a spec without registering it: the admin API's validation (bad config, unresolved credentials). */
  async validate(spec: PoolSpec): Promise<Pool> {
    const build = this.#options.build;
    if (build === undefined) throw errors.invalidRequest('this control plane cannot add pools at runtime');
    return build(spec);
  }

  list(): Pool[] {
    return [...this.#configured, ...this.#runtime.values()];
  }

  get(name: string): Pool | undefined {
    return this.#configured.find((pool) => pool.config.name === name) ?? this.#runtime.get(name);
  }

  isConfigured(name: string): boolean {
    return this.#configured.some((pool) => pool.config.name === name);
  }

  policy(): PlacementPolicy {
    return this.#policy;
  }

  /** Whether the policy in force was stored by an admin (else it is the config file's). */
  policySource(): 'config' | 'api' {
    return this.#policyStored ? 'api' : 'config';
  }

  view(name: string): PoolView | undefined {
    return this.#views.get(name);
  }

  /** The adapter of a pool, or the reason there is none, as an ApiError. */
  adapterOf(name: string): ExecutionAdapter {
    const pool = this.get(name);
    if (pool === undefined) throw errors.providerUnavailable(`pool ${name} no longer exists`, { pool: name });
    if (pool.adapter === undefined) {
      throw errors.providerUnavailable(
        `pool ${name} has no adapter in this build (kind ${pool.config.adapter}${pool.problem ? `: ${pool.problem}` : ''})`,
        { pool: name, adapter: pool.config.adapter },
      );
    }
    return pool.adapter;
  }

  /**
   * After a provider_unavailable: the pool is down for every container until a probe that starts after
   * this moment succeeds. Written to the store (the truth) and applied here at once.
   */
  async markDown(name: string, reason: string, at = new Date(this.#now())): Promise<void> {
    const since = at.toISOString();
    const view = this.#views.get(name);
    this.#views.set(name, {
      pool: name,
      healthy: view?.healthy ?? true,
      reason: view?.reason ?? null,
      capabilities: view?.capabilities ?? null,
      capacity: view?.capacity ?? null,
      refreshedAt: view?.refreshedAt ?? new Date(0).toISOString(),
      downSince: since,
      downReason: reason,
    });
    await this.#options.store?.markPoolDown(name, since, reason);
  }

  /**
   * The one answer to "which features does this pool offer": the last probe's (EffectiveFeatures applied),
   * else what this container read when it built the pool. The probe wins: a container that built the pool
   * while its backend was unreachable would otherwise keep an empty list for its whole life. Placement,
   * operations, streamed exec, the admin view and the trust report all ask here.
   */
  featuresOf(name: string): string[] {
    return this.#views.get(name)?.capabilities?.features ?? this.get(name)?.config.features ?? [];
  }

  /** Healthy unless it has no adapter, its last probe failed, or an adapter error marked it down since. */
  health(name: string, _now = Date.now()): { healthy: boolean; reason: string | null } {
    const pool = this.get(name);
    if (pool === undefined) return { healthy: false, reason: 'no such pool' };
    if (pool.adapter === undefined) {
      return {
        healthy: false,
        reason: `no adapter for kind ${pool.config.adapter} in this build${pool.problem ? ` (${pool.problem})` : ''}`,
      };
    }
    const view = this.#views.get(name);
    if (
      view?.downSince !== undefined &&
      view.downSince !== null &&
      Date.parse(view.refreshedAt) <= Date.parse(view.downSince)
    ) {
      return {
        healthy: false,
        reason: `the backend was unavailable at ${view.downSince}: ${view.downReason ?? 'no reason given'}`,
      };
    }
    if (view !== undefined && !view.healthy) return { healthy: false, reason: view.reason ?? 'probe failed' };
    return { healthy: true, reason: null };
  }

  isHealthy(name: string, now = Date.now()): boolean {
    return this.health(name, now).healthy;
  }
}
