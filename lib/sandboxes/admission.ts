import { isKnownFeature } from '../adapter/features.ts';
import { reservationFor } from '../budgets/billing.ts';
import { fromMicros, ratesOf } from '../budgets/prices.ts';
import type { Config, Profile } from '../config.ts';
import { errors } from '../errors.ts';
import { networkFeatures, resolveNetworkPolicy, type SandboxNetwork } from '../network/policy.ts';
import { type PlacementRequest, type PoolState, place } from '../placement/policy.ts';
import { poolStatesNow } from '../placement/rank.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import { neverFits } from '../quotas/usage.ts';
import { type Resources, resourcesSchema, type SandboxIdle } from '../schemas/sandbox-parts.ts';
import { type CreateSandboxRequest, defaultTtlSeconds } from '../schemas/sandboxes.ts';
import type { OrgRecord } from '../store/records.ts';
import { readAlong } from '../store/request-reads.ts';
import type { SnapshotStore } from '../store/snapshots/port.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import { resolveIdlePolicy } from './idle.ts';

export interface AdmissionDeps {
  store: TenancyStore & SnapshotStore;
  pools: PoolRegistry;
  config: Config;
}

/** What admission settled about a create request: everything the new record takes from it. */
export interface Admission {
  projectId: string | null;
  allowedPools: string[] | null;
  capabilities: string[];
  classification: string | null;
  resources: Resources;
  template: string | null;
  regions: string[] | null;
  /** The org's maxQueued, for the store's count of waiting sandboxes. */
  maxQueued: number;
  idle: SandboxIdle | null;
  /** Its egress policy in force (lib/network/policy.ts), whose features are among `capabilities`. */
  network: SandboxNetwork | null;
  /** The permitted, eligible pools healthy now, in placement order: where a warm instance may answer it. */
  warmPools: string[];
}

/**
 * Admission of a create request: its project, the snapshot it starts from (which pins its pool), the
 * profile merged in, known capabilities and classification, pools that exist, resources that can ever
 * fit the org's quota, and at least one permitted pool that could ever run it. Pools, the policy and the
 * org are read fresh: an operator's change applies to the very next request, whichever container
 * serves it.
 */
export async function admit(
  deps: AdmissionDeps,
  principal: OrgPrincipal,
  request: CreateSandboxRequest,
): Promise<Admission> {
  const projectId = await projectFor(deps, principal, request.projectId);
  // A restore (or fork) runs where its snapshot lives: snapshots are not portable between backends.
  let allowedPools = request.placement?.allowedPools ?? null;
  if (request.fromSnapshot !== undefined) {
    const snapshot = await deps.store.getSnapshot(principal.orgId, request.fromSnapshot);
    if (
      snapshot === undefined ||
      (principal.projectId !== null && snapshot.projectId !== principal.projectId)
    ) {
      throw errors.notFound('snapshot', request.fromSnapshot);
    }
    if (snapshot.status === 'failed') {
      throw errors.invalidState(`snapshot ${snapshot.id} failed and cannot be restored`, {
        status: snapshot.status,
      });
    }
    if (allowedPools !== null && !allowedPools.includes(snapshot.pool)) {
      throw errors.invalidRequest(
        `snapshot ${snapshot.id} lives on pool ${snapshot.pool}, which placement.allowedPools excludes`,
        { field: 'placement.allowedPools', pool: snapshot.pool },
      );
    }
    allowedPools = [snapshot.pool];
  }
  const profile = profileOf(deps.config, request.profile);
  const asked = [...new Set([...(request.capabilities ?? []), ...(profile?.capabilities ?? [])])];
  validateCapabilities(asked);
  const classification = request.classification ?? profile?.classification ?? null;
  if (classification !== null && !(classification in deps.config.classifications)) {
    throw errors.invalidRequest(
      `unknown classification ${classification} (known: ${Object.keys(deps.config.classifications).join(', ')})`,
      { field: 'classification' },
    );
  }
  // Admission reads pools, the policy and the quota fresh: an operator's change applies to the very next
  // request, whichever container serves it. The org and the pools' version usually came with the key, in
  // the same round trip; the pools are read again only if their version moved.
  const orgRead = readAlong.org(principal.orgId);
  const poolsVersion = readAlong.poolsVersion(principal.orgId);
  const [org] = await Promise.all([
    orgRead === undefined ? freshOrg(deps, principal.orgId) : found(orgRead, principal.orgId),
    poolsVersion === undefined ? deps.pools.sync(true) : deps.pools.syncTo(poolsVersion),
  ]);
  for (const name of request.placement?.allowedPools ?? []) await deps.pools.ensure(name);
  for (const name of request.placement?.allowedPools ?? []) {
    if (deps.pools.get(name) === undefined) {
      throw errors.invalidRequest(`placement.allowedPools names an unknown pool: ${name}`, {
        field: 'placement.allowedPools',
        pool: name,
      });
    }
  }
  const network = resolveNetworkPolicy(
    request.network,
    deps.config.templates.find((entry) => entry.name === request.template)?.network,
    deps.config.network,
    org.networkPolicy,
  );
  // The policy is placed like any feature: only a pool that declares it can enforce it receives it.
  const capabilities = [...new Set([...asked, ...networkFeatures(network)])];
  const resources = resourcesSchema.parse({ ...profile?.resources, ...request.resources });
  const never = neverFits(resources, org.quota);
  if (never !== undefined) throw errors.quotaExceeded(`this sandbox can never run: ${never}`, { resources });
  const template = request.template ?? null;
  const regions = request.placement?.regions ?? null;
  const eligible = refuseWhatCannotRun(deps, {
    capabilities,
    template,
    resources,
    allowedPools,
    regions,
    classification,
  });
  await refuseWhatNoBudgetCovers(deps, org, projectId, {
    reservation: cheapestReservation(eligible, resources, request.ttlSeconds ?? defaultTtlSeconds),
  });
  return {
    projectId,
    allowedPools,
    capabilities,
    classification,
    resources,
    template,
    regions,
    maxQueued: org.quota.maxQueued,
    network,
    warmPools: eligible.filter((pool) => pool.healthy).map((pool) => pool.config.name),
    idle: resolveIdlePolicy(
      request.idle,
      deps.config.templates.find((entry) => entry.name === template)?.idle,
      org.idlePolicy,
    ),
  };
}

/**
 * The org, read fresh for each create: a copy cached per container would let a quota just lowered
 * through another container admit a sandbox that can never run (docs/architecture.md).
 */
async function freshOrg(deps: AdmissionDeps, orgId: string): Promise<OrgRecord> {
  return found((await deps.store.getOrg(orgId)) ?? null, orgId);
}

function found(org: OrgRecord | null, orgId: string): OrgRecord {
  if (org === null) throw errors.notFound('org', orgId);
  return org;
}

function profileOf(config: Config, name: string | undefined): Profile | undefined {
  if (name === undefined) return undefined;
  const profile = config.profiles[name];
  if (profile === undefined) {
    throw errors.invalidRequest(
      `unknown profile ${name} (known: ${Object.keys(config.profiles).join(', ') || 'none'})`,
      { field: 'profile' },
    );
  }
  return profile;
}

/**
 * Refuses at once what no permitted pool can ever run (capabilities, templates, limits, policy), so
 * the caller gets a 422 with each pool's reason instead of a sandbox that waits until it times out.
 * Health and room are left to the scheduler: they change. The registry was synced fresh by `admit`, so
 * a pool or policy changed through another container moments ago already counts.
 */
function refuseWhatCannotRun(deps: AdmissionDeps, request: PlacementRequest): PoolState[] {
  const { verdict, rejected, ranked } = place(
    request,
    poolStatesNow(deps.pools),
    { policy: deps.pools.policy(), classifications: deps.config.classifications },
    { staticOnly: true },
  );
  if (verdict.kind === 'unsupported' || verdict.kind === 'never') {
    throw errors.unsupportedCapability(verdict.message, {
      rejected: rejected.map(({ pool, reason }) => ({ pool, reason })),
    });
  }
  return ranked;
}

/** The least a sandbox can reserve: its maximum cost on the cheapest pool that could run it. */
function cheapestReservation(pools: PoolState[], resources: Resources, ttlSeconds: number): number {
  const costs = pools.map(
    (pool) => reservationFor(ratesOf(pool.config.prices, resources), ttlSeconds, new Date()).reserved,
  );
  return costs.length === 0 ? 0 : Math.min(...costs);
}

/**
 * A sandbox whose maximum cost is more than a whole monthly budget (the org's or its project's) can
 * never be reserved: refused at once, like a request larger than the quota. One that fits a budget but
 * not what is left of it waits (queued, waitingFor quota) until reservations settle.
 */
async function refuseWhatNoBudgetCovers(
  deps: AdmissionDeps,
  org: OrgRecord,
  projectId: string | null,
  cost: { reservation: number },
): Promise<void> {
  if (cost.reservation === 0) return;
  const project = projectId === null ? undefined : await deps.store.getProject(org.id, projectId);
  for (const [scope, budget] of [
    ['org', org.budget],
    ['project', project?.budget ?? null],
  ] as const) {
    if (budget !== null && cost.reservation > budget) {
      throw errors.quotaExceeded(
        `this sandbox can never run: its maximum cost of ${fromMicros(cost.reservation)} (its TTL at the cheapest eligible pool's prices) is more than the ${scope}'s monthly budget of ${fromMicros(budget)}`,
        { field: 'budget', scope, limit: fromMicros(budget), requested: fromMicros(cost.reservation) },
      );
    }
  }
}

async function projectFor(
  deps: AdmissionDeps,
  principal: OrgPrincipal,
  requested: string | undefined,
): Promise<string | null> {
  if (principal.projectId === null) {
    if (requested === undefined) return null;
    const project = await deps.store.getProject(principal.orgId, requested);
    if (project === undefined) throw errors.notFound('project', requested);
    return requested;
  }
  if (requested !== undefined && requested !== principal.projectId) {
    throw errors.forbidden(`this key is restricted to project ${principal.projectId}`);
  }
  return principal.projectId;
}

function validateCapabilities(capabilities: readonly string[]): void {
  for (const name of capabilities) {
    if (!isKnownFeature(name)) {
      throw errors.invalidRequest(`unknown capability ${name}`, {
        field: 'capabilities',
        capability: name,
      });
    }
    if (name === 'isolation.none') {
      throw errors.invalidRequest('isolation.none cannot be requested', {
        field: 'capabilities',
        capability: name,
      });
    }
  }
}
