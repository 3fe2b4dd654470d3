import { freePrices } from '../budgets/prices.ts';
import type { Config } from '../config.ts';
import { errors } from '../errors.ts';
import { type Log, silentLog } from '../log.ts';
import type { PoolStore } from '../store/pools/port.ts';
import type { PlacementPolicy, PoolRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import type { WarmStore } from '../store/warm/port.ts';
import { retire } from '../warm/refill.ts';
import { warmStatusOf } from '../warm/status.ts';
import type * as z from '../zod.ts';
import type { createPoolSchema, PoolDetail, updatePoolSchema } from './admin-schemas.ts';
import type { Pool, PoolRegistry, PoolSpec } from './registry.ts';

export interface PoolAdminDeps {
  pools: PoolRegistry;
  store: PoolStore & SandboxStore & WarmStore;
  config: Config;
  log?: Log;
  now?: () => Date;
}

/**
 * Pools and the placement policy at runtime (/v1/admin/pools, /v1/admin/policy). A pool is validated by
 * building it (strict fields, the adapter's own config schema, the credential reference resolving)
 * before it is stored; config-file pools are read-only here, since the next deploy would undo a change.
 */
export class PoolAdmin {
  readonly #deps: PoolAdminDeps;

  constructor(deps: PoolAdminDeps) {
    this.#deps = deps;
  }

  #now(): string {
    return (this.#deps.now?.() ?? new Date()).toISOString();
  }

  // Operator reads sync fresh: an admin sees the change it just made, whichever container serves it.
  async list(): Promise<PoolDetail[]> {
    await this.#deps.pools.sync(true);
    return Promise.all(this.#deps.pools.list().map((pool) => this.#detail(pool)));
  }

  async get(name: string): Promise<PoolDetail> {
    await this.#deps.pools.sync(true);
    const pool = this.#deps.pools.get(name);
    if (pool === undefined) throw errors.notFound('pool', name);
    return this.#detail(pool);
  }

  async create(input: z.infer<typeof createPoolSchema>, actor: string): Promise<PoolDetail> {
    await this.#deps.pools.sync(true);
    if (this.#deps.pools.get(input.name) !== undefined) {
      throw errors.conflict(`pool ${input.name} already exists`, { pool: input.name });
    }
    await this.#deps.pools.validate(input);
    const now = this.#now();
    await this.#deps.store.putPool({ ...input, createdAt: now, updatedAt: now }, 'create', {
      actor,
      action: 'pool.created',
      target: input.name,
      details: summary(input),
    });
    await this.#deps.pools.sync(true);
    return this.get(input.name);
  }

  async update(name: string, patch: z.infer<typeof updatePoolSchema>, actor: string): Promise<PoolDetail> {
    const record = await this.#stored(name);
    const next: PoolRecord = { ...record, updatedAt: this.#now() };
    for (const [field, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      if (value === null) delete (next as Record<string, unknown>)[field];
      else (next as Record<string, unknown>)[field] = value;
    }
    const { createdAt: _createdAt, updatedAt: _updatedAt, ...spec } = next;
    await this.#deps.pools.validate(spec);
    await this.#deps.store.putPool(next, 'replace', {
      actor,
      action: 'pool.updated',
      target: name,
      details: { changed: Object.keys(patch) },
    });
    await this.#deps.pools.sync(true);
    return this.get(name);
  }

  async delete(name: string, actor: string): Promise<{ name: string; deleted: true }> {
    await this.#stored(name);
    const live = await this.#deps.store.listSandboxesByPool(name, { limit: 1 });
    if (live.items.length > 0) {
      throw errors.invalidState(
        `pool ${name} still has live sandboxes (${live.items[0]?.id} and maybe more): terminate them first`,
        { pool: name },
      );
    }
    // Its warm instances are the installation's, no sandbox's: they go with it (records first, then the
    // instances; what a failed delete leaves, the backend's own listing shows and the operator removes).
    const pool = this.#deps.pools.get(name);
    let retired = 0;
    for (const record of await this.#deps.store.listWarm(name)) {
      if (await retire({ store: this.#deps.store, log: this.#deps.log ?? silentLog }, pool, record))
        retired++;
    }
    await this.#deps.store.deletePool(name, {
      actor,
      action: 'pool.deleted',
      target: name,
      details: { warmRetired: retired },
    });
    await this.#deps.pools.sync(true);
    return { name, deleted: true };
  }

  async policy(): Promise<PlacementPolicy & { source: 'config' | 'api' }> {
    await this.#deps.pools.sync(true);
    return { ...this.#deps.pools.policy(), source: this.#deps.pools.policySource() };
  }

  async setPolicy(
    policy: PlacementPolicy,
    actor: string,
  ): Promise<PlacementPolicy & { source: 'config' | 'api' }> {
    await this.#deps.pools.sync(true);
    for (const name of policy.externalPools) {
      const pool = this.#deps.pools.get(name);
      if (pool === undefined) {
        throw errors.invalidRequest(`externalPools names an unknown pool: ${name}`, {
          field: 'externalPools',
          pool: name,
        });
      }
      if (pool.config.trust !== 'external') {
        throw errors.invalidRequest(`externalPools names ${name}, which is a private pool`, {
          field: 'externalPools',
          pool: name,
        });
      }
    }
    const previous = this.#deps.pools.policy();
    await this.#deps.store.putPolicy(policy, {
      actor,
      action: 'policy.changed',
      target: 'placement-policy',
      details: { from: previous, to: policy },
    });
    return this.policy();
  }

  async #stored(name: string): Promise<PoolRecord> {
    if (this.#deps.pools.isConfigured(name)) {
      throw errors.invalidState(`pool ${name} is defined in the config file; change it there and deploy`, {
        pool: name,
      });
    }
    const record = await this.#deps.store.getPool(name);
    if (record === undefined) throw errors.notFound('pool', name);
    return record;
  }

  async #detail(pool: Pool): Promise<PoolDetail> {
    const name = pool.config.name;
    const view = this.#deps.pools.view(name);
    const {
      name: _name,
      adapter,
      trust,
      region,
      maxConcurrency,
      costModel,
      prices,
      config,
      credentials,
    } = pool.config;
    return {
      name,
      adapter,
      trust,
      ...(region !== undefined && { region }),
      maxConcurrency,
      ...(costModel !== undefined && { costModel }),
      prices: prices ?? freePrices,
      config,
      ...(credentials !== undefined && { credentials }),
      features: this.#deps.pools.featuresOf(name),
      source: pool.source,
      health: this.#deps.pools.health(name),
      capabilities: view?.capabilities ?? pool.capabilities,
      capacity: view?.capacity ?? null,
      active: await this.#deps.store.getPoolUsage(name),
      refreshedAt: view?.refreshedAt ?? null,
      warm: await warmStatusOf(this.#deps.store, pool, this.#deps.config, new Date()),
    };
  }
}

/** What an audit record says of a pool: its settings without adapter config values or credential names. */
function summary(spec: PoolSpec): Record<string, unknown> {
  return {
    adapter: spec.adapter,
    trust: spec.trust,
    region: spec.region ?? null,
    maxConcurrency: spec.maxConcurrency,
    configKeys: Object.keys(spec.config),
  };
}
