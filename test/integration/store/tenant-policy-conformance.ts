import { describe, expect, it } from 'vitest';
import { billingAfterTtlChange, reservationFor } from '../../../lib/budgets/billing.ts';
import { type PoolPrices, poolPricesSchema, ratesOf } from '../../../lib/budgets/prices.ts';
import { ApiError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import { transitionSandbox } from '../../../lib/sandboxes/transition.ts';
import type { SandboxStatus } from '../../../lib/schemas/sandbox-status.ts';
import { quotaSchema } from '../../../lib/schemas/tenancy-parts.ts';
import type { WebhookRecord } from '../../../lib/schemas/webhooks.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { OrgRecord, ProjectRecord, SandboxRecord } from '../../../lib/store/records.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { sandboxRecord } from '../../helpers/records.ts';

/**
 * Budgets on every Store: reservations, settlements and refusals written with the sandbox's move, exact
 * under races. Figures are in micros (millionths of a currency unit), worked out by hand in each test.
 */

export interface BudgetStoreUnderTest {
  create(): Promise<Store>;
}

const admin = { actor: 'admin', action: 'test', target: 'x', details: {} };
const december = '2026-12';
const at = (seconds: number) => new Date(Date.UTC(2026, 11, 3, 12, 0, seconds));

/**
 * 1 per create; running 0.01 per vCPU-second, paused 0.001, stopped 0.0001: a 1-vCPU sandbox with a TTL
 * of 100 s reserves 1 + 100 x 0.01 = 2.00 (2,000,000 micros).
 */
const prices: PoolPrices = poolPricesSchema.parse({
  perCreate: 1,
  running: { perVcpuSecond: 0.01 },
  paused: { perVcpuSecond: 0.001 },
  stopped: { perVcpuSecond: 0.0001 },
});
const resources = { cpu: 1, memoryMiB: 1024, diskGiB: 1 };

async function newOrg(store: Store, budget: number | null): Promise<OrgRecord> {
  const org: OrgRecord = {
    id: newId('org'),
    name: 'org',
    quota: quotaSchema.parse({ maxSandboxes: 1000, maxCPU: 1000, maxMemoryMiB: 1024 * 1024 }),
    idlePolicy: null,
    networkPolicy: null,
    budget: null,
    createdAt: new Date().toISOString(),
  };
  await store.createOrg(org, { ...admin, action: 'org.created', target: org.id });
  if (budget !== null) await store.setBudget(org.id, null, budget, [december], admin);
  return org;
}

async function newProject(store: Store, orgId: string, budget: number | null): Promise<ProjectRecord> {
  const project: ProjectRecord = {
    id: newId('project'),
    orgId,
    name: 'p',
    budget: null,
    createdAt: new Date().toISOString(),
  };
  await store.createProject(project, admin);
  if (budget !== null) await store.setBudget(orgId, project.id, budget, [december], admin);
  return project;
}

async function queued(store: Store, orgId: string, overrides: Partial<SandboxRecord> = {}) {
  const record = sandboxRecord(orgId, { resources, ttlSeconds: 100, ...overrides });
  await store.createSandbox(record, { ...admin, action: 'sandbox.created' });
  return record;
}

/** Activation as the provisioner does it: the reservation comes in the patch. */
function activate(store: Store, record: SandboxRecord, now = at(0)) {
  return transitionSandbox(
    store,
    record,
    'provisioning',
    { pool: 'p1', billing: reservationFor(ratesOf(prices, record.resources), record.ttlSeconds, now) },
    { now, actor: 'system' },
  );
}

function move(store: Store, record: SandboxRecord, to: SandboxStatus, now: Date, patch = {}) {
  return transitionSandbox(store, record, to, patch, { now, actor: 'system' });
}

async function refusal(promise: Promise<unknown>): Promise<ApiError | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

export function budgetConformance(name: string, subject: BudgetStoreUnderTest): void {
  describe(`Budget conformance: ${name}`, () => {
    it('reserves the maximum cost at activation and settles the actual cost at termination', async () => {
      const store = await subject.create();
      const org = await newOrg(store, 10_000_000);
      let s = await activate(store, await queued(store, org.id));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 2_000_000, spent: 0 });
      s = await move(store, s, 'running', at(5), { expiresAt: at(105).toISOString() });
      s = await move(store, s, 'pausing', at(35));
      s = await move(store, s, 'paused', at(36));
      s = await move(store, s, 'resuming', at(56));
      s = await move(store, s, 'running', at(57));
      s = await move(store, s, 'terminating', at(67));
      // 1 create + running 5..35, 35..36 (pausing), 56..57 (resuming), 57..67 = 42 s x 0.01
      // + paused 36..56 = 20 s x 0.001: 1 + 0.42 + 0.02 = 1.44.
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 1_440_000 });
      expect(s.billing).toMatchObject({ reserved: 0, spent: 1_440_000, runningMs: 42_000, pausedMs: 20_000 });
      // Settled once: the last move changes nothing.
      await move(store, s, 'terminated', at(90));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 1_440_000 });
      expect((await verifyOrgChain(store, org.id)).ok).toBe(true);
    });

    it('bills stopped time at its own rate and nothing past expiresAt', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      let s = await activate(store, await queued(store, org.id));
      s = await move(store, s, 'running', at(0), { expiresAt: at(100).toISOString() });
      s = await move(store, s, 'stopping', at(10));
      s = await move(store, s, 'stopped', at(11));
      // The sweep ends it 50 s late: stopped 11..100 is billed, 100..150 is not.
      await move(store, s, 'terminating', at(150));
      // 1 + 11 s x 0.01 + 89 s x 0.0001 = 1 + 0.11 + 0.0089 = 1.1189.
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 1_118_900 });
    });

    it('gives the reservation back when provisioning returns to the queue, and a failure spends nothing', async () => {
      const store = await subject.create();
      const org = await newOrg(store, 2_000_000);
      let s = await activate(store, await queued(store, org.id));
      s = await move(store, s, 'queued', at(3));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 0 });
      s = await activate(store, s, at(4));
      await move(store, s, 'failed', at(9));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 0 });
    });

    it('20 concurrent activations against a budget of 5 reservations: exactly 5 succeed, the rest are refused naming the budget', async () => {
      const store = await subject.create();
      const org = await newOrg(store, 10_000_000);
      const sandboxes = await Promise.all(Array.from({ length: 20 }, () => queued(store, org.id)));
      const results = await Promise.all(sandboxes.map((s) => refusal(activate(store, s))));
      expect(results.filter((r) => r === 'ok')).toHaveLength(5);
      for (const result of results.filter((r) => r !== 'ok')) {
        expect(result).toMatchObject({
          code: 'quota_exceeded',
          details: { field: 'budget', scope: 'org', month: december, limit: 10, requested: 2 },
        });
      }
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 10_000_000, spent: 0 });
      expect((await store.getUsage(org.id)).sandboxes).toBe(5);
      const refused = sandboxes[results.indexOf(results.find((r) => r !== 'ok') ?? 'ok')];
      expect((await store.getSandbox(org.id, refused?.id ?? ''))?.status).toBe('queued');
    });

    it("a month's first charge finds the budget the org has now, whichever container starts the month", async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      // Set while November was current: December's ledger does not exist yet.
      await store.setBudget(org.id, null, 3_000_000, ['2026-11'], admin);
      const [a, b] = [await queued(store, org.id), await queued(store, org.id)];
      const results = await Promise.all([refusal(activate(store, a)), refusal(activate(store, b))]);
      expect(results.filter((r) => r === 'ok')).toHaveLength(1);
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 2_000_000, spent: 0 });
    });

    it('a budget lowered below what is held refuses new charges and stops nothing; raised or removed, they fit', async () => {
      const store = await subject.create();
      const org = await newOrg(store, 10_000_000);
      const running = await activate(store, await queued(store, org.id));
      await store.setBudget(org.id, null, 1_000_000, [december], admin);
      const next = await queued(store, org.id);
      expect(await refusal(activate(store, next))).toMatchObject({
        code: 'quota_exceeded',
        details: { field: 'budget', limit: 1, used: 2, requested: 2 },
      });
      expect((await store.getSandbox(org.id, running.id))?.status).toBe('provisioning');
      await store.setBudget(org.id, null, 4_000_000, [december], admin);
      const second = await activate(store, next);
      const third = await queued(store, org.id);
      expect(await refusal(activate(store, third))).toMatchObject({ code: 'quota_exceeded' });
      await store.setBudget(org.id, null, null, [december], admin);
      await activate(store, third);
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 6_000_000, spent: 0 });
      expect(second.status).toBe('provisioning');
      expect((await store.getOrg(org.id))?.budget).toBeNull();
    });

    it('a TTL change reserves the difference; one past the budget is refused and changes nothing', async () => {
      const store = await subject.create();
      const org = await newOrg(store, 3_000_000);
      let s = await activate(store, await queued(store, org.id));
      s = await move(store, s, 'running', at(0), { expiresAt: at(100).toISOString() });
      const extend = (record: SandboxRecord, ttlSeconds: number, now: Date) => {
        const expiresAt = new Date(now.getTime() + ttlSeconds * 1000).toISOString();
        return store.updateSandbox(
          record,
          { ttlSeconds, expiresAt, billing: billingAfterTtlChange(record, { ttlSeconds, expiresAt }, now) },
          { audit: { ...admin, action: 'sandbox.updated' } },
        );
      };
      // At 40 s, 150 s more: 1 + (40 + 150) s x 0.01 = 2.90.
      s = await extend(s, 150, at(40));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 2_900_000, spent: 0 });
      // 170 s more would be 1 + 2.10 = 3.10, past 3.
      expect(await refusal(extend(s, 170, at(40)))).toMatchObject({
        code: 'quota_exceeded',
        details: { field: 'budget', requested: 0.2 },
      });
      expect((await store.getSandbox(org.id, s.id))?.expiresAt).toBe(at(190).toISOString());
      // Shorter: 10 s from 50 s is 1 + 0.6 = 1.60, and the difference comes back.
      await extend(s, 10, at(50));
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 1_600_000, spent: 0 });
    });

    it("counts a project's sandboxes against its own budget and its org's", async () => {
      const store = await subject.create();
      const org = await newOrg(store, 5_000_000);
      const project = await newProject(store, org.id, 3_000_000);
      await activate(store, await queued(store, org.id, { projectId: project.id }));
      const refused = await refusal(activate(store, await queued(store, org.id, { projectId: project.id })));
      expect(refused).toMatchObject({
        code: 'quota_exceeded',
        details: { field: 'budget', scope: 'project' },
      });
      // Outside the project only the org's budget counts: 2 of 5 held, 2 more fit, then the org's refuses.
      await activate(store, await queued(store, org.id));
      expect(await refusal(activate(store, await queued(store, org.id)))).toMatchObject({
        details: { field: 'budget', scope: 'org' },
      });
      expect(await store.getLedger(org.id, project.id, december)).toEqual({ reserved: 2_000_000, spent: 0 });
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 4_000_000, spent: 0 });
      expect((await store.getProject(org.id, project.id))?.budget).toBe(3_000_000);
    });

    it('refuses a budget for an unknown org or project, writing nothing', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      expect(await refusal(store.setBudget(newId('org'), null, 1, [december], admin))).toMatchObject({
        code: 'not_found',
      });
      expect(await refusal(store.setBudget(org.id, newId('project'), 1, [december], admin))).toMatchObject({
        code: 'not_found',
      });
      expect(await store.getLedger(org.id, null, december)).toEqual({ reserved: 0, spent: 0 });
    });
  });
}

/** Webhook endpoints on every Store: the per-org bound exact under races, rotation conditional. */
/** Idle policy on every Store: a call's activity is kept apart from the record and only moves forward. */
export function activityConformance(name: string, subject: BudgetStoreUnderTest): void {
  describe(`Activity conformance: ${name}`, () => {
    it('each touch answers the activity before it; an older touch moves nothing and answers its own time', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      const record = await queued(store, org.id);
      const t = (seconds: number) => at(seconds).toISOString();
      expect(await store.lastActivity(org.id, record.id)).toBeUndefined();
      expect(await store.touchSandbox(org.id, record.id, t(10))).toBeUndefined();
      expect(await store.touchSandbox(org.id, record.id, t(70))).toBe(t(10));
      // Recorded late (a slow call that began earlier): the later time stays.
      expect(await store.touchSandbox(org.id, record.id, t(40))).toBe(t(40));
      expect(await store.lastActivity(org.id, record.id)).toBe(t(70));
      // The record itself never moves: no version, no conflict with a lifecycle write.
      expect((await store.getSandbox(org.id, record.id))?.version).toBe(record.version);
      const other = await queued(store, org.id);
      expect(await store.lastActivity(org.id, other.id)).toBeUndefined();
    });

    it('concurrent touches keep the latest time', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      const record = await queued(store, org.id);
      const times = Array.from({ length: 20 }, (_, i) => at(i).toISOString());
      await Promise.all([...times].reverse().map((time) => store.touchSandbox(org.id, record.id, time)));
      expect(await store.lastActivity(org.id, record.id)).toBe(times.at(-1));
    });
  });
}

export function webhookConformance(name: string, subject: BudgetStoreUnderTest): void {
  describe(`Webhook conformance: ${name}`, () => {
    const endpoint = (orgId: string, secret = 'whsec_a'): WebhookRecord => ({
      id: newId('webhook'),
      orgId,
      url: 'https://hooks.example.com/x',
      events: null,
      description: null,
      secrets: [{ secret, validUntil: null }],
      createdAt: new Date().toISOString(),
    });

    it('15 concurrent registrations against a bound of 10: exactly 10 stored, the rest quota_exceeded', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      const results = await Promise.all(
        Array.from({ length: 15 }, () => refusal(store.createWebhook(endpoint(org.id), 10, admin))),
      );
      expect(results.filter((r) => r === 'ok')).toHaveLength(10);
      for (const result of results.filter((r) => r !== 'ok')) {
        expect(result).toMatchObject({ code: 'quota_exceeded', details: { field: 'webhooks', limit: 10 } });
      }
      expect(await store.listWebhooks(org.id)).toHaveLength(10);
      // Deleting one frees its place.
      const [first] = await store.listWebhooks(org.id);
      await store.deleteWebhook(org.id, first?.id ?? '', admin);
      expect(await refusal(store.createWebhook(endpoint(org.id), 10, admin))).toBe('ok');
      expect(await store.listWebhooks(newId('org'))).toEqual([]);
    });

    it('rotates secrets only from the ones read: a second rotation from the same read is a conflict', async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      const hook = endpoint(org.id);
      await store.createWebhook(hook, 10, admin);
      const next = [
        { secret: 'whsec_b', validUntil: null },
        { secret: 'whsec_a', validUntil: '2026-12-04T00:00:00.000Z' },
      ];
      await store.updateWebhookSecrets(hook, next, admin);
      expect((await store.getWebhook(org.id, hook.id))?.secrets).toEqual(next);
      expect(
        await refusal(store.updateWebhookSecrets(hook, [{ secret: 'x', validUntil: null }], admin)),
      ).toMatchObject({
        code: 'conflict',
      });
      expect(await refusal(store.deleteWebhook(org.id, newId('webhook'), admin))).toMatchObject({
        code: 'not_found',
      });
      expect(await refusal(store.createWebhook(endpoint(newId('org')), 10, admin))).toMatchObject({
        code: 'not_found',
      });
      expect((await verifyOrgChain(store, org.id)).ok).toBe(true);
    });

    it("keeps each delivery's attempts, newest event first, paged, apart per endpoint and per org", async () => {
      const store = await subject.create();
      const org = await newOrg(store, null);
      const hook = endpoint(org.id);
      const other = endpoint(org.id);
      const attempt = (
        webhookId: string,
        n: number,
        at: string,
        status: number | null,
        error: string | null,
      ) =>
        store.recordDeliveryAttempt({
          orgId: org.id,
          webhookId,
          delivery: {
            id: `evt_${org.id.slice(4)}_${n}`,
            type: 'sandbox.running',
            createdAt: new Date(Date.UTC(2026, 11, 7, 12, 0, n)).toISOString(),
            sandboxId: `sbx_${n}`,
          },
          at,
          status,
          error,
        });
      // Event 1: refused, unreachable, then delivered, then a duplicate attempt (at least once).
      await attempt(hook.id, 1, '2026-12-07T12:01:00.000Z', 503, null);
      await attempt(hook.id, 1, '2026-12-07T12:02:00.000Z', null, 'could not connect (ECONNREFUSED)');
      await attempt(hook.id, 1, '2026-12-07T12:03:00.000Z', 204, null);
      await attempt(hook.id, 1, '2026-12-07T12:04:00.000Z', 200, null);
      // Event 2 (a second later, so newer) and event 10 (later still: ids sort apart from times).
      await attempt(hook.id, 2, '2026-12-07T12:01:00.000Z', 500, null);
      await attempt(hook.id, 10, '2026-12-07T12:01:00.000Z', 200, null);
      await attempt(other.id, 3, '2026-12-07T12:01:00.000Z', 200, null);

      const first = await store.listDeliveries(org.id, hook.id, { limit: 2 });
      expect(first.items.map((item) => item.sandboxId)).toEqual(['sbx_10', 'sbx_2']);
      expect(first.nextCursor).not.toBeNull();
      const rest = await store.listDeliveries(org.id, hook.id, { limit: 2, cursor: first.nextCursor ?? '' });
      expect(rest).toEqual({
        items: [
          {
            id: `evt_${org.id.slice(4)}_1`,
            webhookId: hook.id,
            type: 'sandbox.running',
            sandboxId: 'sbx_1',
            createdAt: '2026-12-07T12:00:01.000Z',
            attempts: 4,
            lastAttemptAt: '2026-12-07T12:04:00.000Z',
            lastStatus: 200,
            lastError: null,
            deliveredAt: '2026-12-07T12:03:00.000Z',
          },
        ],
        nextCursor: null,
      });
      expect(first.items[1]).toMatchObject({ attempts: 1, lastStatus: 500, deliveredAt: null });
      expect(
        (await store.listDeliveries(org.id, other.id, { limit: 10 })).items.map((i) => i.sandboxId),
      ).toEqual(['sbx_3']);
      expect((await store.listDeliveries(newId('org'), hook.id, { limit: 10 })).items).toEqual([]);
    });
  });
}
