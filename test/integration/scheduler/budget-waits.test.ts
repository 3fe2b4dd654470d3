import { describe, expect, it } from 'vitest';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { testPlane } from '../../helpers/plane.ts';

/** What the provisioner does with a sandbox its budget cannot cover: wait, or fail when it never can. */
describe('budgets in the provisioner', () => {
  // 1 per create and 0.01 a vCPU-second: a 1-vCPU sandbox with a TTL of 100 s reserves 2.
  const prices = { perCreate: 1, running: { perVcpuSecond: 0.01 } };

  it('waits for quota while the budget is held, and fails with the cause budget once the budget is below its whole reservation', async () => {
    const { plane, queue, principal } = await testPlane({ prices });
    queue.onSend = undefined;
    await plane.tenancy.setBudget(principal.orgId, null, { monthly: 3 });
    const create = () =>
      plane.sandboxes.create(principal, {
        placement: { allowedPools: ['first'] },
        resources: { cpu: 1 },
        ttlSeconds: 100,
      });
    const { sandbox: first } = await create();
    await provisionSandbox(plane, { sandboxId: first.id, orgId: principal.orgId }, 1);
    expect((await plane.sandboxes.get(principal, first.id)).status).toBe('running');
    const { sandbox: second } = await create();
    await provisionSandbox(plane, { sandboxId: second.id, orgId: principal.orgId }, 1);
    expect(await plane.sandboxes.get(principal, second.id)).toMatchObject({
      status: 'queued',
      waitingFor: 'quota',
      statusMessage: expect.stringMatching(/budget for \d{4}-\d{2} would be exceeded/),
    });
    // Lowered below the 2 it would reserve: it can never run, and says why.
    await plane.tenancy.setBudget(principal.orgId, null, { monthly: 1.5 });
    await provisionSandbox(plane, { sandboxId: second.id, orgId: principal.orgId }, 2);
    expect(await plane.sandboxes.get(principal, second.id)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(
        /can never run: its maximum cost of 2 is more than the org's monthly budget of 1.5/,
      ),
    });
    const failed = (await plane.store.listAudit(principal.orgId, { limit: 100 })).items.find(
      (event) => event.target === second.id && event.action === 'sandbox.failed',
    );
    expect(failed?.details.cause).toBe('budget');
  });
});
