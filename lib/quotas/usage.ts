import type { Resources } from '../schemas/sandbox-parts.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import type { Quota } from '../schemas/tenancy-parts.ts';

/** What an org has reserved: kept as one aggregate item so quota checks are O(1). */
export interface Usage {
  cpu: number;
  memoryMiB: number;
  diskGiB: number;
  sandboxes: number;
  snapshots: number;
}

export const zeroUsage: Usage = { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0, snapshots: 0 };

/** What one sandbox reserves in its status: of its org's quota, and (poolSlot) of its pool's concurrency. */
export interface Holdings {
  cpu: number;
  memoryMiB: number;
  diskGiB: number;
  sandboxes: number;
  poolSlot: number;
}

/**
 * Reservations are a function of status, so every transition's accounting is the difference between
 * two holdings, written in the same transaction as the transition:
 * - provisioning, running, paused: everything (paused keeps memory resident);
 * - stopping, pausing, resuming: everything until the move is done; starting: everything, reserved
 *   before the backend is asked (two starts cannot both fit one quota);
 * - stopped: disk, the active slot and the pool slot (cpu and memory leave quota usage);
 * - queued, terminating, terminated, failed: nothing (a retry returns the reservation to the pool).
 */
export function holdingsOf(status: SandboxStatus, resources: Resources): Holdings {
  switch (status) {
    case 'provisioning':
    case 'running':
    case 'paused':
    case 'stopping':
    case 'starting':
    case 'pausing':
    case 'resuming':
      return {
        cpu: resources.cpu,
        memoryMiB: resources.memoryMiB,
        diskGiB: resources.diskGiB,
        sandboxes: 1,
        poolSlot: 1,
      };
    case 'stopped':
      return { cpu: 0, memoryMiB: 0, diskGiB: resources.diskGiB, sandboxes: 1, poolSlot: 1 };
    default:
      return { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0, poolSlot: 0 };
  }
}

export interface UsageDelta {
  org: Omit<Usage, 'snapshots'>;
  /** Pool slots released (-1) and taken (+1), by pool name. */
  pools: Record<string, number>;
}

export function usageDelta(
  from: { status: SandboxStatus; resources: Resources; pool: string | null },
  to: { status: SandboxStatus; resources: Resources; pool: string | null },
): UsageDelta {
  const before = holdingsOf(from.status, from.resources);
  const after = holdingsOf(to.status, to.resources);
  const pools: Record<string, number> = {};
  if (from.pool !== null && before.poolSlot !== 0)
    pools[from.pool] = (pools[from.pool] ?? 0) - before.poolSlot;
  if (to.pool !== null && after.poolSlot !== 0) pools[to.pool] = (pools[to.pool] ?? 0) + after.poolSlot;
  for (const [name, value] of Object.entries(pools)) if (value === 0) delete pools[name];
  return {
    org: {
      cpu: round(after.cpu - before.cpu),
      memoryMiB: after.memoryMiB - before.memoryMiB,
      diskGiB: after.diskGiB - before.diskGiB,
      sandboxes: after.sandboxes - before.sandboxes,
    },
    pools,
  };
}

/** CPU is fractional; keep sums exact to the thousandth so repeated add and release return to zero. */
export function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export const usageLimits: { field: keyof Usage; limit: keyof Quota }[] = [
  { field: 'cpu', limit: 'maxCPU' },
  { field: 'memoryMiB', limit: 'maxMemoryMiB' },
  { field: 'diskGiB', limit: 'maxDiskGiB' },
  { field: 'sandboxes', limit: 'maxSandboxes' },
  { field: 'snapshots', limit: 'maxSnapshots' },
];

/** The first quota a usage change would break, or undefined when it fits. */
export function exceededQuota(
  usage: Usage,
  delta: Partial<Usage>,
  quota: Quota,
): { field: keyof Usage; limit: number; used: number; requested: number } | undefined {
  for (const { field, limit } of usageLimits) {
    const requested = delta[field] ?? 0;
    if (requested > 0 && round(usage[field] + requested) > quota[limit]) {
      return { field, limit: quota[limit], used: usage[field], requested };
    }
  }
  return undefined;
}

/** A request that asks more than the org's whole quota can never run: refuse it at once. */
export function neverFits(resources: Resources, quota: Quota): string | undefined {
  if (resources.cpu > quota.maxCPU)
    return `cpu ${resources.cpu} is more than the org's quota of ${quota.maxCPU}`;
  if (resources.memoryMiB > quota.maxMemoryMiB) {
    return `memoryMiB ${resources.memoryMiB} is more than the org's quota of ${quota.maxMemoryMiB}`;
  }
  if (resources.diskGiB > quota.maxDiskGiB) {
    return `diskGiB ${resources.diskGiB} is more than the org's quota of ${quota.maxDiskGiB}`;
  }
  if (quota.maxSandboxes < 1) return "the org's quota allows no sandboxes";
  return undefined;
}
