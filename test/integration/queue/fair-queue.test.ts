import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { startLocalRuntime } from '../../../infra/local/runtime.ts';
import type { CreateRequest, Instance } from '../../../lib/adapter/port.ts';
import { parseConfig } from '../../../lib/config.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';
import { waitFor } from '../../helpers/http-client.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/**
 * Org A queues 500 sandboxes, then org B queues 5. With fair delivery (SQS fair queues on AWS; the
 * local poller's round-robin over message groups here) B's sandboxes are provisioned long before A's
 * backlog drains. The same run with plain in-order delivery shows the assertion tells the two apart.
 */
async function provisioningOrder(holdCapacity: number | undefined) {
  const order: string[] = [];
  const fake = new FakeAdapter();
  const create = fake.create.bind(fake);
  fake.create = async (request: CreateRequest): Promise<Instance> => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    order.push(request.id);
    return create(request);
  };
  const runtime = await startLocalRuntime({
    config: parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
    adapters: { fake },
    sweepIntervalSeconds: 0,
    ...(holdCapacity !== undefined && { pollerHoldCapacity: holdCapacity }),
  });
  try {
    const principalOf = async (name: string): Promise<Extract<Principal, { kind: 'org' }>> => {
      const org = await runtime.plane.tenancy.createOrg({
        name,
        quota: {
          maxSandboxes: 1000,
          maxCPU: 1000,
          maxMemoryMiB: 1024 * 1024,
          maxDiskGiB: 100_000,
          maxQueued: 1000,
        },
      });
      return orgPrincipal(org.id);
    };
    const a = await principalOf('a');
    const b = await principalOf('b');
    for (let i = 0; i < 500; i++) await runtime.plane.sandboxes.create(a, {});
    const bIds: string[] = [];
    for (let i = 0; i < 5; i++) bIds.push((await runtime.plane.sandboxes.create(b, {})).sandbox.id);
    // How many of A's were already provisioned when B's messages were sent.
    const provisionedAtEnqueue = order.length;
    await waitFor(
      async () => order.length,
      (n) => n >= 505,
      'every sandbox to be provisioned',
    );
    return { bPositions: bIds.map((id) => order.indexOf(id)), provisionedAtEnqueue };
  } finally {
    await runtime.stop();
  }
}

describe('fair queueing across orgs', () => {
  it('provisions org B’s 5 sandboxes before org A’s backlog of 500 drains', {
    timeout: 120_000,
  }, async () => {
    const { bPositions, provisionedAtEnqueue } = await provisioningOrder(undefined);
    expect(bPositions.every((p) => p >= 0)).toBe(true);
    // A backlog remained when B arrived, and B's five were served within a few batches of arriving
    // (two pollers of ten in flight), not after the backlog.
    expect(provisionedAtEnqueue).toBeLessThan(400);
    expect(Math.max(...bPositions)).toBeLessThan(provisionedAtEnqueue + 60);
  });

  it('without fair delivery B waits behind A (the control that shows the test discriminates)', {
    timeout: 120_000,
  }, async () => {
    const { bPositions, provisionedAtEnqueue } = await provisioningOrder(10);
    expect(provisionedAtEnqueue).toBeLessThan(400);
    expect(Math.min(...bPositions)).toBeGreaterThan(480);
  });
});
