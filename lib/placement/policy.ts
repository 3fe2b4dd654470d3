/**
 * Placement policy: which pools may run a sandbox, which of those can, and in what order to try them.
 * Pure functions over a snapshot of the pools, so every rule is testable as a table (test/unit/placement).
 *
 * 1. Permitted: the request's allowedPools; private pools always; an external pool only when the global
 *    policy allows external placement, names it in externalPools, and the request's classification
 *    allows external work. The operator's trust setting on the pool is authoritative.
 * 2. Eligible (static): advertises every requested feature, offers the template, fits the pool's limits.
 * 3. Eligible (now): healthy, and has room: Capacity.Fits on the largest free node for bounded adapters,
 *    maxConcurrency for unbounded ones.
 * 4. Ranked: private before external, then the requested regions, then estimated cost, then free room,
 *    then the operator's order.
 */

import { capacityFits } from '../adapter/capacity.ts';
import type { Capabilities, Capacity } from '../adapter/port.ts';
import { runningHourly } from '../budgets/prices.ts';
import type { PlacementPolicy, PoolConfig } from '../config.ts';
import type { Resources } from '../schemas/sandbox-parts.ts';

export interface PlacementRequest {
  capabilities: string[];
  template: string | null;
  resources: Resources;
  allowedPools: string[] | null;
  regions: string[] | null;
  classification: string | null;
}

/** What placement knows of one pool: its config, its effective features and its last refreshed view. */
export interface PoolState {
  config: Pick<PoolConfig, 'name' | 'trust' | 'region' | 'maxConcurrency' | 'costModel' | 'prices'>;
  /** Effective features (EffectiveFeatures applied). */
  features: string[];
  /** Declared limits and templates; null when they could not be read (no limits assumed). */
  capabilities: Pick<Capabilities, 'maxCPU' | 'maxMemoryMiB' | 'maxDiskGiB' | 'templates'> | null;
  healthy: boolean;
  /** Why the pool is unhealthy (no adapter in this build, a failed probe). */
  unhealthyReason: string | null;
  capacity: Capacity | null;
  /** Active slots taken, when known; compared with maxConcurrency. */
  active: number | null;
}

export interface PlacementContext {
  policy: PlacementPolicy;
  /** Classification name -> whether it allows external pools. Unknown names were refused at admission. */
  classifications: Record<string, { allowExternal: boolean }>;
}

export type RejectionKind =
  | 'not-permitted'
  | 'missing-capabilities'
  | 'template'
  | 'limits'
  | 'unhealthy'
  | 'no-room';

export interface Rejection {
  pool: string;
  kind: RejectionKind;
  reason: string;
}

/** Rejections that no amount of waiting changes. */
const permanent: ReadonlySet<RejectionKind> = new Set([
  'not-permitted',
  'missing-capabilities',
  'template',
  'limits',
]);

export type Verdict =
  /** At least one pool can take it now, in `ranked` order. */
  | { kind: 'place' }
  /**
   * Pools could take it later: it waits in the queue, for `capacity` when a pool that could run it is
   * healthy but full (a release elsewhere may make room), for a `pool` when every such pool is unhealthy.
   */
  | { kind: 'wait'; waitingFor: 'pool' | 'capacity'; message: string }
  /** It can never run: only missing capabilities stand in the way (422 unsupported_capability). */
  | { kind: 'unsupported'; message: string }
  /** It can never run for other reasons: nothing permitted, templates, limits. */
  | { kind: 'never'; message: string };

export interface Placement {
  ranked: PoolState[];
  rejected: Rejection[];
  verdict: Verdict;
}

export interface PlaceOptions {
  /** Admission ignores health and room (they change); the scheduler checks them. */
  staticOnly?: boolean;
}

export function place(
  request: PlacementRequest,
  pools: readonly PoolState[],
  context: PlacementContext,
  options: PlaceOptions = {},
): Placement {
  const rejected: Rejection[] = [];
  const eligible: PoolState[] = [];
  for (const pool of pools) {
    const rejection = permitted(request, pool, context) ?? fitsStatically(request, pool);
    const now = rejection ?? (options.staticOnly === true ? undefined : fitsNow(request, pool));
    if (now === undefined) eligible.push(pool);
    else rejected.push({ pool: pool.config.name, ...now });
  }
  const ranked = rank(request, eligible);
  return { ranked, rejected, verdict: verdictOf(ranked, rejected) };
}

function permitted(
  request: PlacementRequest,
  pool: PoolState,
  context: PlacementContext,
): Omit<Rejection, 'pool'> | undefined {
  const name = pool.config.name;
  if (request.allowedPools !== null && !request.allowedPools.includes(name)) {
    return { kind: 'not-permitted', reason: 'not in placement.allowedPools' };
  }
  if (pool.config.trust === 'private') return undefined;
  if (!context.policy.allowExternal) {
    return {
      kind: 'not-permitted',
      reason: 'external pool, and the policy does not allow external placement',
    };
  }
  if (!context.policy.externalPools.includes(name)) {
    return { kind: 'not-permitted', reason: "external pool not named in the policy's externalPools" };
  }
  if (
    request.classification !== null &&
    context.classifications[request.classification]?.allowExternal !== true
  ) {
    return {
      kind: 'not-permitted',
      reason: `external pool, and classification ${request.classification} keeps work on private pools`,
    };
  }
  return undefined;
}

function fitsStatically(request: PlacementRequest, pool: PoolState): Omit<Rejection, 'pool'> | undefined {
  const missing = request.capabilities.filter((feature) => !pool.features.includes(feature));
  if (missing.length > 0)
    return { kind: 'missing-capabilities', reason: `missing capabilities: ${missing.join(', ')}` };
  const limits = pool.capabilities;
  if (limits === null) return undefined;
  if (
    request.template !== null &&
    limits.templates.length > 0 &&
    !limits.templates.includes(request.template)
  ) {
    return {
      kind: 'template',
      reason: `does not offer template ${request.template} (offers ${limits.templates.join(', ')})`,
    };
  }
  const over = [
    { name: 'cpu', asked: request.resources.cpu, max: limits.maxCPU },
    { name: 'memoryMiB', asked: request.resources.memoryMiB, max: limits.maxMemoryMiB },
    { name: 'diskGiB', asked: request.resources.diskGiB, max: limits.maxDiskGiB },
  ].filter(({ asked, max }) => max > 0 && asked > max);
  if (over.length > 0) {
    return {
      kind: 'limits',
      reason: `exceeds the pool's limits: ${over.map((o) => `${o.name} ${o.asked} > ${o.max}`).join(', ')}`,
    };
  }
  return undefined;
}

function fitsNow(request: PlacementRequest, pool: PoolState): Omit<Rejection, 'pool'> | undefined {
  if (!pool.healthy)
    return { kind: 'unhealthy', reason: `unhealthy: ${pool.unhealthyReason ?? 'probe failed'}` };
  const capacity = pool.capacity;
  if (capacity?.bounded === true) {
    if (!capacityFits(capacity, request.resources)) {
      return {
        kind: 'no-room',
        reason: `no node has room (largest free: ${capacity.largestFreeCPU} cpu, ${capacity.largestFreeMemoryMiB} MiB)`,
      };
    }
    return undefined;
  }
  const max = pool.config.maxConcurrency;
  if (max > 0 && pool.active !== null && pool.active >= max) {
    return { kind: 'no-room', reason: `at maxConcurrency (${pool.active} of ${max} active)` };
  }
  return undefined;
}

/**
 * Estimated cost per hour of this request on a pool: its costModel, else its running price (what
 * budgets are charged), else 0.
 */
export function estimatedHourlyCost(resources: Resources, pool: Pick<PoolState, 'config'>): number {
  const model = pool.config.costModel;
  if (model === undefined) return runningHourly(pool.config.prices, resources);
  return resources.cpu * model.cpuHour + (resources.memoryMiB / 1024) * model.memoryGiBHour;
}

/** How many more sandboxes like this one the pool could take now (Infinity when nothing bounds it). */
export function freeRoom(resources: Resources, pool: PoolState): number {
  const capacity = pool.capacity;
  if (capacity?.bounded === true) {
    return Math.min(capacity.freeCPU / resources.cpu, capacity.freeMemoryMiB / resources.memoryMiB);
  }
  const max = pool.config.maxConcurrency;
  if (max > 0) return max - (pool.active ?? 0);
  return Number.POSITIVE_INFINITY;
}

function rank(request: PlacementRequest, eligible: PoolState[]): PoolState[] {
  const regions = request.regions ?? [];
  const keyed = eligible.map((pool, order) => ({
    pool,
    order,
    external: pool.config.trust === 'external' ? 1 : 0,
    // A pool in a requested region first; earlier regions in the list before later ones.
    region: regions.length === 0 ? 0 : indexOrEnd(regions, pool.config.region),
    cost: estimatedHourlyCost(request.resources, pool),
    room: freeRoom(request.resources, pool),
  }));
  keyed.sort(
    (a, b) =>
      a.external - b.external ||
      a.region - b.region ||
      a.cost - b.cost ||
      compareRoom(b.room, a.room) ||
      a.order - b.order,
  );
  return keyed.map((k) => k.pool);
}

function indexOrEnd(list: string[], value: string | undefined): number {
  const index = value === undefined ? -1 : list.indexOf(value);
  return index === -1 ? list.length : index;
}

function compareRoom(a: number, b: number): number {
  if (a === b) return 0;
  return a > b ? 1 : -1;
}

function verdictOf(ranked: PoolState[], rejected: Rejection[]): Verdict {
  if (ranked.length > 0) return { kind: 'place' };
  const described = describeRejections(rejected);
  if (rejected.length === 0) return { kind: 'never', message: 'no pool is configured' };
  if (rejected.every((r) => r.kind === 'not-permitted')) {
    return { kind: 'never', message: `no pool is permitted for this sandbox (${described})` };
  }
  const considered = rejected.filter((r) => r.kind !== 'not-permitted');
  if (considered.every((r) => r.kind === 'missing-capabilities')) {
    return {
      kind: 'unsupported',
      message: `no permitted pool offers the requested capabilities (${described})`,
    };
  }
  if (considered.every((r) => permanent.has(r.kind))) {
    return { kind: 'never', message: `no permitted pool can ever run this sandbox (${described})` };
  }
  const full = considered.some((r) => r.kind === 'no-room');
  return { kind: 'wait', waitingFor: full ? 'capacity' : 'pool', message: described };
}

export function describeRejections(rejected: readonly Pick<Rejection, 'pool' | 'reason'>[]): string {
  return rejected.map((r) => `${r.pool}: ${r.reason}`).join('; ');
}
