import { describe, expect, it } from 'vitest';
import { exceededQuota, holdingsOf, neverFits, usageDelta, zeroUsage } from '../../../lib/quotas/usage.ts';
import type { SandboxStatus } from '../../../lib/schemas/sandbox-status.ts';
import { quotaSchema } from '../../../lib/schemas/tenancy-parts.ts';

/**
 * What a sandbox reserves in each status, written out from the specification (seeds 001, "Stop",
 * "Start", "Pause"): running and everything on its way holds all; stop releases CPU and memory and keeps
 * disk, the active-sandbox count and the pool slot; a paused sandbox keeps CPU, memory and its slot;
 * queued and ended sandboxes hold nothing.
 */
const resources = { cpu: 2, memoryMiB: 4096, diskGiB: 20 };
const all = { cpu: 2, memoryMiB: 4096, diskGiB: 20, sandboxes: 1, poolSlot: 1 };
const none = { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0, poolSlot: 0 };
const expected: Record<SandboxStatus, typeof all> = {
  queued: none,
  provisioning: all,
  running: all,
  stopping: all,
  stopped: { cpu: 0, memoryMiB: 0, diskGiB: 20, sandboxes: 1, poolSlot: 1 },
  starting: all,
  pausing: all,
  paused: all,
  resuming: all,
  terminating: none,
  terminated: none,
  failed: none,
};

describe('quota holdings by status', () => {
  for (const [status, holdings] of Object.entries(expected)) {
    it(`${status} holds ${JSON.stringify(holdings)}`, () => {
      expect(holdingsOf(status as SandboxStatus, resources)).toEqual(holdings);
    });
  }
});

describe('the usage change of a transition', () => {
  it('stop gives back CPU and memory only; start takes them again', () => {
    const running = { status: 'running' as const, resources, pool: 'p' };
    const stopped = { status: 'stopped' as const, resources, pool: 'p' };
    expect(usageDelta(running, stopped)).toEqual({
      org: { cpu: -2, memoryMiB: -4096, diskGiB: 0, sandboxes: 0 },
      pools: {},
    });
    expect(usageDelta(stopped, running)).toEqual({
      org: { cpu: 2, memoryMiB: 4096, diskGiB: 0, sandboxes: 0 },
      pools: {},
    });
  });

  it('activation takes the pool slot; termination gives it and everything else back', () => {
    const queued = { status: 'queued' as const, resources, pool: null };
    const provisioning = { status: 'provisioning' as const, resources, pool: 'p' };
    const terminating = { status: 'terminating' as const, resources, pool: 'p' };
    expect(usageDelta(queued, provisioning)).toEqual({
      org: { cpu: 2, memoryMiB: 4096, diskGiB: 20, sandboxes: 1 },
      pools: { p: 1 },
    });
    expect(usageDelta(provisioning, terminating)).toEqual({
      org: { cpu: -2, memoryMiB: -4096, diskGiB: -20, sandboxes: -1 },
      pools: { p: -1 },
    });
  });

  it('moving provisioning to another pool moves the slot and nothing else', () => {
    expect(
      usageDelta(
        { status: 'provisioning', resources, pool: 'a' },
        { status: 'provisioning', resources, pool: 'b' },
      ),
    ).toEqual({ org: { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0 }, pools: { a: -1, b: 1 } });
  });

  it('a status change that holds no slot on either side touches no pool', () => {
    expect(
      usageDelta({ status: 'queued', resources, pool: 'a' }, { status: 'failed', resources, pool: 'a' })
        .pools,
    ).toEqual({});
  });

  it('keeps fractional CPU exact: a tenth reserved ten times and released returns to zero', () => {
    const tenth = { cpu: 0.1, memoryMiB: 128, diskGiB: 1 };
    let cpu = 0;
    for (let i = 0; i < 10; i++) {
      cpu += usageDelta(
        { status: 'queued', resources: tenth, pool: null },
        { status: 'running', resources: tenth, pool: null },
      ).org.cpu;
    }
    expect(cpu).toBeCloseTo(1, 10);
    expect(
      usageDelta(
        { status: 'running', resources: { ...tenth, cpu: 0.3 }, pool: null },
        { status: 'stopped', resources: { ...tenth, cpu: 0.3 }, pool: null },
      ).org.cpu,
    ).toBe(-0.3);
  });
});

describe('the first quota a change would break', () => {
  const quota = quotaSchema.parse({
    maxCPU: 4,
    maxMemoryMiB: 8192,
    maxDiskGiB: 100,
    maxSandboxes: 3,
    maxSnapshots: 2,
  });
  const used = { cpu: 3, memoryMiB: 4096, diskGiB: 50, sandboxes: 2, snapshots: 2 };

  it('names the field, the limit, what is used and what was asked', () => {
    expect(exceededQuota(used, { cpu: 2 }, quota)).toEqual({ field: 'cpu', limit: 4, used: 3, requested: 2 });
    expect(exceededQuota(used, { memoryMiB: 8192 }, quota)).toEqual({
      field: 'memoryMiB',
      limit: 8192,
      used: 4096,
      requested: 8192,
    });
    expect(exceededQuota(used, { diskGiB: 51 }, quota)).toMatchObject({ field: 'diskGiB', limit: 100 });
    expect(exceededQuota(used, { sandboxes: 2 }, quota)).toMatchObject({ field: 'sandboxes', limit: 3 });
    expect(exceededQuota(used, { snapshots: 1 }, quota)).toMatchObject({ field: 'snapshots', limit: 2 });
  });

  it('lets a change up to the limit through, and any release even past it', () => {
    expect(
      exceededQuota(used, { cpu: 1, memoryMiB: 4096, diskGiB: 50, sandboxes: 1 }, quota),
    ).toBeUndefined();
    // Over quota already (a quota lowered below usage): giving back is always allowed.
    const over = { ...used, cpu: 10 };
    expect(exceededQuota(over, { cpu: -2 }, quota)).toBeUndefined();
    expect(exceededQuota(over, { cpu: 0, memoryMiB: 1 }, quota)).toBeUndefined();
    expect(exceededQuota(zeroUsage, {}, quota)).toBeUndefined();
  });
});

describe('what can never run', () => {
  const quota = quotaSchema.parse({ maxCPU: 4, maxMemoryMiB: 8192, maxDiskGiB: 100, maxSandboxes: 3 });

  it('refuses each resource over the whole quota, naming it and the limit', () => {
    expect(neverFits({ cpu: 5, memoryMiB: 1, diskGiB: 1 }, quota)).toBe(
      "cpu 5 is more than the org's quota of 4",
    );
    expect(neverFits({ cpu: 1, memoryMiB: 8193, diskGiB: 1 }, quota)).toBe(
      "memoryMiB 8193 is more than the org's quota of 8192",
    );
    expect(neverFits({ cpu: 1, memoryMiB: 1, diskGiB: 101 }, quota)).toBe(
      "diskGiB 101 is more than the org's quota of 100",
    );
    expect(neverFits(resources, { ...quota, maxSandboxes: 0 })).toBe("the org's quota allows no sandboxes");
  });

  it('takes a request of exactly the whole quota', () => {
    expect(neverFits({ cpu: 4, memoryMiB: 8192, diskGiB: 100 }, quota)).toBeUndefined();
    expect(neverFits(resources, { ...quota, maxSandboxes: 1 })).toBeUndefined();
  });
});
