import { describe, expect, it } from 'vitest';
import { sandboxWriteEffects } from '../../../lib/store/sandboxes/write-effects.ts';
import { sandboxRecord } from '../../helpers/records.ts';

const orgId = 'org_01J00000000000000000000000';
const queued = sandboxRecord(orgId, { resources: { cpu: 1.5, memoryMiB: 2048, diskGiB: 10 } });

describe("a sandbox write's effects, computed once for both stores", () => {
  it('a new queued sandbox: one more waiting, nothing held', () => {
    expect(sandboxWriteEffects(undefined, queued)).toEqual({
      orgId,
      sandboxId: queued.id,
      usage: { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0 },
      waiting: 1,
      waitingOnPools: 0,
      poolSlots: [],
      ledgers: [],
    });
  });

  it('placed on a pool: still waiting while provisioning, everything reserved, a slot within the limit', () => {
    const provisioning = { ...queued, status: 'provisioning' as const, pool: 'fleet' };
    expect(sandboxWriteEffects(queued, provisioning, 3)).toEqual({
      orgId,
      sandboxId: queued.id,
      usage: { cpu: 1.5, memoryMiB: 2048, diskGiB: 10, sandboxes: 1 },
      waiting: 0,
      waitingOnPools: 0,
      poolSlots: [{ pool: 'fleet', change: 1, limit: 3 }],
      ledgers: [],
    });
    const running = { ...provisioning, status: 'running' as const };
    expect(sandboxWriteEffects(provisioning, running, 3)).toMatchObject({
      usage: { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0 },
      waiting: -1,
      poolSlots: [],
    });
  });

  it('stopped: cpu and memory released, disk and the slot kept; terminating releases the rest', () => {
    const running = { ...queued, status: 'running' as const, pool: 'fleet' };
    const stopped = { ...running, status: 'stopped' as const };
    expect(sandboxWriteEffects(running, stopped).usage).toEqual({
      cpu: -1.5,
      memoryMiB: -2048,
      diskGiB: 0,
      sandboxes: 0,
    });
    expect(sandboxWriteEffects(stopped, { ...stopped, status: 'terminating' }, 3)).toMatchObject({
      usage: { cpu: 0, memoryMiB: 0, diskGiB: -10, sandboxes: -1 },
      // The limit binds only a slot taken (both stores check it for an increase alone).
      poolSlots: [{ pool: 'fleet', change: -1, limit: 3 }],
    });
  });

  it('waits on the pools only while queued for a pool, capacity or a snapshot, never for quota', () => {
    const onCapacity = { ...queued, waitingFor: 'capacity' as const };
    const onQuota = { ...queued, waitingFor: 'quota' as const };
    const provisioning = { ...queued, status: 'provisioning' as const, pool: 'fleet' };
    expect(sandboxWriteEffects(queued, onCapacity).waitingOnPools).toBe(1);
    expect(sandboxWriteEffects(onCapacity, { ...queued, waitingFor: 'snapshot' }).waitingOnPools).toBe(0);
    expect(sandboxWriteEffects(onCapacity, onQuota).waitingOnPools).toBe(-1);
    expect(sandboxWriteEffects(queued, onQuota).waitingOnPools).toBe(0);
    expect(sandboxWriteEffects(onCapacity, provisioning, 3)).toMatchObject({
      waiting: 0,
      waitingOnPools: -1,
    });
    // Leaving the queue another way (terminated while waiting) counts it out too.
    expect(
      sandboxWriteEffects({ ...queued, waitingFor: 'pool' }, { ...queued, status: 'terminating' })
        .waitingOnPools,
    ).toBe(-1);
  });
});
