import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { budgetViewSchema, orgUsageSchema } from '../../lib/schemas/tenancy.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

/**
 * Budgets over HTTP on the local runtime, on both stores. The pool `priced` charges 1 per create and
 * 0.01 per vCPU-second running: a 1-vCPU sandbox with a TTL of 100 s reserves 1 + 100 x 0.01 = 2.
 */
describe.each(['memory', 'dynamodb'] as const)('budgets over HTTP (%s store)', (store) => {
  let e: E2e;
  let orgId: string;
  const prices = { perCreate: 1, running: { perVcpuSecond: 0.01 } };

  beforeAll(async () => {
    e = await startE2e({
      fakes: { priced: { adapter: new FakeAdapter(), pool: { prices } } },
      ...(store === 'dynamodb' && { dynamodbEndpoint: inject('dynamodbEndpoint') }),
    });
    const usage = orgUsageSchema.parse((await e.api.get('/v1/usage', e.key)).body);
    orgId = usage.orgId;
  });

  afterAll(async () => {
    await e?.stop();
  });

  const usage = async () => orgUsageSchema.parse((await e.api.get('/v1/usage', e.key)).body);
  const create = async (body: Record<string, unknown> = {}) =>
    e.api.post('/v1/sandboxes', e.key, {
      placement: { allowedPools: ['priced'] },
      resources: { cpu: 1, memoryMiB: 1024 },
      ttlSeconds: 100,
      ...body,
    });

  it('shows each pool its prices in the admin API and the trust report; other pools cost nothing', async () => {
    const pool = z
      .object({ prices: z.unknown() })
      .parse((await e.api.get('/v1/admin/pools/priced', e.runtime.adminKey)).body);
    const full = {
      perCreate: 1,
      running: { perVcpuSecond: 0.01, perGiBSecond: 0 },
      paused: { perVcpuSecond: 0, perGiBSecond: 0 },
      stopped: { perVcpuSecond: 0, perGiBSecond: 0 },
    };
    expect(pool.prices).toEqual(full);
    const trust = z
      .object({ pools: z.array(z.object({ name: z.string(), prices: z.unknown() })) })
      .parse((await e.api.get('/v1/trust', e.key)).body);
    expect(trust.pools.find((p) => p.name === 'priced')?.prices).toEqual(full);
    expect(trust.pools.find((p) => p.name === 'local')?.prices).toMatchObject({ perCreate: 0 });
  });

  it('refuses a bad budget with 400 and only the bootstrap key may set an org budget', async () => {
    expectError(
      await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.runtime.adminKey, { monthly: -1 }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.runtime.adminKey, {}),
      400,
      'invalid_request',
    );
    expectError(await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.key, { monthly: 5 }), 403, 'forbidden');
  });

  it('reserves at activation, waits when the budget is held, refuses what can never fit, and settles on delete', async () => {
    const set = await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.runtime.adminKey, { monthly: 5.5 });
    expect(set.status, set.text).toBe(200);
    expect(budgetViewSchema.parse(set.body)).toMatchObject({
      monthly: 5.5,
      spent: 0,
      reserved: 0,
      left: 5.5,
    });

    const a = sandboxSchema.parse((await create()).body);
    const b = sandboxSchema.parse((await create()).body);
    await e.until(a.id, 'running');
    await e.until(b.id, 'running');
    expect((await usage()).budget).toMatchObject({ monthly: 5.5, reserved: 4, spent: 0, left: 1.5 });

    // Fits the budget, not what is left of it (1.5 of the 2 it reserves): it waits, saying why.
    const c = sandboxSchema.parse((await create()).body);
    const waiting = await waitFor(
      () => e.get(c.id),
      (s) => s.waitingFor === 'quota',
      'the third sandbox waiting for the budget',
    );
    expect(waiting.status).toBe('queued');
    expect(waiting.statusMessage).toMatch(/budget for \d{4}-\d{2} would be exceeded/);

    // More than the whole budget: 1 + 1000 x 0.01 = 11 > 5.5, refused at once.
    const never = expectError(await create({ ttlSeconds: 1000 }), 429, 'quota_exceeded');
    expect(never.error.message).toMatch(/maximum cost of 11 .*monthly budget of 5.5/);
    expect(never.error.details).toMatchObject({ field: 'budget', scope: 'org', limit: 5.5, requested: 11 });

    // A longer TTL reserves the difference: 400 s more is about 3 more, past what is left.
    const longer = expectError(
      await e.api.patch(`/v1/sandboxes/${a.id}`, e.key, { ttlSeconds: 400 }),
      429,
      'quota_exceeded',
    );
    expect(longer.error.details).toMatchObject({ field: 'budget' });
    expect((await e.get(a.id)).ttlSeconds).toBe(100);

    // Deleting one settles it (its create and the seconds it ran: about 1 of its 2), which leaves
    // about 2.5, and wakes the waiting one.
    await e.destroy(a.id);
    await e.until(c.id, 'running');
    const after = (await usage()).budget;
    expect(after.reserved).toBe(4);
    // Its actual cost: 1 per create plus 0.01 a second it ran, never more than its reservation of 2.
    expect(after.spent).toBeGreaterThanOrEqual(1);
    expect(after.spent).toBeLessThanOrEqual(2);
    expect(after.left).toBeCloseTo(5.5 - 4 - after.spent, 6);

    const audit = z
      .object({ items: z.array(z.object({ action: z.string() })) })
      .parse((await e.api.get('/v1/audit?limit=100', e.key)).body);
    expect(audit.items.map((event) => event.action)).toContain('org.budget-changed');

    await e.destroy(b.id);
    await e.destroy(c.id);
    expect((await usage()).budget.reserved).toBe(0);
    await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.runtime.adminKey, { monthly: null });
  });

  it("keeps a project's budget besides its org's, seen by the project's keys", async () => {
    await e.api.put(`/v1/admin/orgs/${orgId}/budget`, e.runtime.adminKey, { monthly: null });
    const project = z
      .object({ id: z.string() })
      .parse(
        (await e.api.post(`/v1/admin/orgs/${orgId}/projects`, e.runtime.adminKey, { name: 'team' })).body,
      );
    const set = await e.api.put(`/v1/admin/orgs/${orgId}/projects/${project.id}/budget`, e.runtime.adminKey, {
      monthly: 3,
    });
    expect(set.status, set.text).toBe(200);
    const key = z.object({ key: z.string() }).parse(
      (
        await e.api.post(`/v1/admin/orgs/${orgId}/keys`, e.runtime.adminKey, {
          name: 'team',
          projectId: project.id,
        })
      ).body,
    ).key;
    const first = sandboxSchema.parse(
      (
        await e.api.post('/v1/sandboxes', key, {
          placement: { allowedPools: ['priced'] },
          resources: { cpu: 1, memoryMiB: 1024 },
          ttlSeconds: 100,
        })
      ).body,
    );
    await e.until(first.id, 'running', key);
    const seen = orgUsageSchema.parse((await e.api.get('/v1/usage', key)).body);
    expect(seen.projectBudget).toMatchObject({ monthly: 3, reserved: 2, left: 1 });
    expect(seen.budget).toMatchObject({ monthly: null, reserved: 2, left: null });
    // 1 + 300 x 0.01 = 4 is more than the project's whole budget.
    const never = expectError(
      await e.api.post('/v1/sandboxes', key, {
        placement: { allowedPools: ['priced'] },
        ttlSeconds: 300,
      }),
      429,
      'quota_exceeded',
    );
    expect(never.error.details).toMatchObject({ scope: 'project' });
    const view = budgetViewSchema.parse(
      (await e.api.get(`/v1/admin/orgs/${orgId}/projects/${project.id}/budget`, e.runtime.adminKey)).body,
    );
    expect(view).toMatchObject({ monthly: 3, reserved: 2 });
    await e.api.delete(`/v1/sandboxes/${first.id}`, key);
    await e.until(first.id, 'terminated', key);
  });
});
