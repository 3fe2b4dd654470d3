import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { silentLog } from '../../../lib/log.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { reconcile } from '../../../lib/scheduler/reconcile.ts';
import { terminateSandbox } from '../../../lib/scheduler/terminate.ts';
import { memoryStore } from '../../../lib/store/memory.ts';
import { RecordingQueue } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/**
 * On AWS each function container holds its own pool registry. A pool registered through the API of one
 * container must be usable from containers that started before it: they find it in the table.
 */
describe('a pool added at runtime, seen from other containers', () => {
  it('provisions, execs, terminates and reconciles on it from containers that never saw it registered', async () => {
    const store = memoryStore();
    const config = parseConfig({ devMode: true, pools: [] });
    // Every container's registry builds `lab` on the same backend, as they would from its stored settings.
    const backend = new FakeAdapter();
    const container = async () =>
      createControlPlane({
        config,
        store,
        queue: new RecordingQueue(),
        pools: await buildPools(config, { log: silentLog, store, adapters: { lab: backend } }),
        log: silentLog,
      });
    const [api, worker, other] = [await container(), await container(), await container()];
    // Each has synced once (and found nothing) before the pool exists.
    for (const c of [api, worker, other]) await c.pools.sync(true);
    const org = await api.tenancy.createOrg({ name: 'o' });
    const principal = orgPrincipal(org.id);
    await api.poolAdmin.create(
      { name: 'lab', adapter: 'fake', trust: 'private', maxConcurrency: 0, config: {} },
      'admin',
    );

    const { sandbox } = await api.sandboxes.create(principal, { placement: { allowedPools: ['lab'] } });
    await provisionSandbox(worker, { sandboxId: sandbox.id, orgId: org.id }, 1);
    expect((await store.getSandbox(org.id, sandbox.id))?.status).toBe('running');
    // A container that started before the pool existed serves exec on it.
    expect((await other.sandboxes.exec(principal, sandbox.id, { command: 'echo hi' })).stdout).toBe(
      'echo hi\n',
    );
    const report = await reconcile(other);
    expect(report.pools.map((p) => p.pool)).toEqual(['lab']);
    await other.sandboxes.delete(principal, sandbox.id);
    const fresh = await container();
    await terminateSandbox(fresh, { sandboxId: sandbox.id, orgId: org.id }, 1);
    const terminated = await store.getSandbox(org.id, sandbox.id);
    expect(terminated?.status).toBe('terminated');
    expect(terminated?.statusMessage).toBe('terminated');
    expect(await backend.list(await store.installation())).toEqual([]);
  });
});
