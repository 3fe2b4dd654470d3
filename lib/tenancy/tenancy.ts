import { monthOf, nextMonth } from '../budgets/billing.ts';
import { budgetView, monthlyMicros, type setBudgetSchema } from '../budgets/ledger.ts';
import { fromMicros } from '../budgets/prices.ts';
import { errors } from '../errors.ts';
import { newId } from '../ids.ts';
import type { NetworkPolicy } from '../network/policy.ts';
import { round, usageLimits } from '../quotas/usage.ts';
import type { IdlePolicy } from '../schemas/sandbox-parts.ts';
import type {
  BudgetView,
  createKeySchema,
  createOrgSchema,
  createProjectSchema,
  KeyView,
  OrgView,
  ProjectView,
  setQuotaSchema,
} from '../schemas/tenancy.ts';
import { quotaSchema } from '../schemas/tenancy-parts.ts';
import type { Page, PageRequest } from '../store/page.ts';
import type { KeyRecord, OrgRecord, ProjectRecord } from '../store/records.ts';
import type { OrgDefault, TenancyStore } from '../store/tenancy/port.ts';
import type * as z from '../zod.ts';
import { e2bKeyForm, mintKeySecret } from './auth.ts';

export function orgView(org: OrgRecord): OrgView {
  return {
    id: org.id,
    name: org.name,
    quota: org.quota,
    budget: org.budget === null ? null : fromMicros(org.budget),
    idlePolicy: org.idlePolicy,
    networkPolicy: org.networkPolicy,
    createdAt: org.createdAt,
  };
}

export function projectView(project: ProjectRecord): ProjectView {
  return {
    id: project.id,
    orgId: project.orgId,
    name: project.name,
    budget: project.budget === null ? null : fromMicros(project.budget),
    createdAt: project.createdAt,
  };
}

export function keyView(key: KeyRecord): KeyView {
  return {
    id: key.id,
    orgId: key.orgId,
    name: key.name,
    role: key.role,
    projectId: key.projectId,
    createdAt: key.createdAt,
    revokedAt: key.revokedAt,
  };
}

export class Tenancy {
  readonly #store: TenancyStore;
  readonly #now: () => Date;

  constructor(deps: { store: TenancyStore; now?: (() => Date) | undefined }) {
    this.#store = deps.store;
    this.#now = deps.now ?? (() => new Date());
  }

  async createOrg(input: z.infer<typeof createOrgSchema>, actor = 'admin'): Promise<OrgView> {
    const org: OrgRecord = {
      id: newId('org'),
      name: input.name,
      quota: quotaSchema.parse(input.quota ?? {}),
      idlePolicy: null,
      networkPolicy: null,
      budget: null,
      createdAt: this.#now().toISOString(),
    };
    await this.#store.createOrg(org, {
      actor,
      action: 'org.created',
      target: org.id,
      details: { name: org.name, quota: org.quota },
    });
    return orgView(org);
  }

  async getOrg(id: string): Promise<OrgRecord> {
    const org = await this.#store.getOrg(id);
    if (org === undefined) throw errors.notFound('org', id);
    return org;
  }

  async listOrgs(page: PageRequest): Promise<Page<OrgView>> {
    const result = await this.#store.listOrgs(page);
    return { items: result.items.map(orgView), nextCursor: result.nextCursor };
  }

  /** The only place a key's secret exists in clear: returned once, stored as a hash. */
  async createKey(
    orgId: string,
    input: z.infer<typeof createKeySchema>,
    actor = 'admin',
  ): Promise<KeyView & { key: string; e2bApiKey: string }> {
    await this.getOrg(orgId);
    if (input.projectId !== undefined) await this.getProject(orgId, input.projectId);
    const id = newId('key');
    const { key, secretHash } = mintKeySecret(id);
    const record: KeyRecord = {
      id,
      orgId,
      name: input.name,
      role: input.role,
      projectId: input.projectId ?? null,
      secretHash,
      createdAt: this.#now().toISOString(),
      revokedAt: null,
    };
    await this.#store.createKey(record, {
      actor,
      action: 'key.created',
      target: id,
      details: { name: record.name, role: record.role, projectId: record.projectId },
    });
    return { ...keyView(record), key, e2bApiKey: e2bKeyForm(key) };
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyView>> {
    await this.getOrg(orgId);
    const result = await this.#store.listKeys(orgId, page);
    return { items: result.items.map(keyView), nextCursor: result.nextCursor };
  }

  /** `administrator`: the org an admin-role caller administers (null: the operator, any org). */
  async revokeKey(id: string, actor = 'admin', administrator: string | null = null): Promise<KeyView> {
    await this.#assertKeyIn(id, administrator);
    return keyView(
      await this.#store.revokeKey(id, this.#now().toISOString(), {
        actor,
        action: 'key.revoked',
        target: id,
        details: {},
      }),
    );
  }

  /** A new key with the old one's org, name, role and project; the old one is revoked once the new one exists. */
  /**
   * A successor with the same name, role and project, and the old key revoked, in one conditional write:
   * concurrent rotations leave exactly one successor, and a key revoked meanwhile gets none.
   */
  async rotateKey(
    id: string,
    actor = 'admin',
    administrator: string | null = null,
  ): Promise<KeyView & { key: string; e2bApiKey: string }> {
    const old = await this.#store.getKey(id);
    if (old === undefined || (administrator !== null && old.orgId !== administrator))
      throw errors.notFound('key', id);
    if (old.revokedAt !== null) throw errors.invalidState(`key ${id} is revoked; create a new key instead`);
    const successorId = newId('key');
    const { key, secretHash } = mintKeySecret(successorId);
    const now = this.#now().toISOString();
    const successor: KeyRecord = { ...old, id: successorId, secretHash, createdAt: now, revokedAt: null };
    await this.#store.rotateKey(id, successor, now, {
      actor,
      action: 'key.rotated',
      target: id,
      details: { replacedBy: successorId, name: old.name, role: old.role, projectId: old.projectId },
    });
    return { ...keyView(successor), key, e2bApiKey: e2bKeyForm(key) };
  }

  /** Another org's key is 404 to an org's administrator, as if it did not exist. */
  async #assertKeyIn(id: string, administrator: string | null): Promise<void> {
    if (administrator === null) return;
    const key = await this.#store.getKey(id);
    if (key === undefined || key.orgId !== administrator) throw errors.notFound('key', id);
  }

  async createProject(
    orgId: string,
    input: z.infer<typeof createProjectSchema>,
    actor = 'admin',
  ): Promise<ProjectView> {
    await this.getOrg(orgId);
    const project: ProjectRecord = {
      id: newId('project'),
      orgId,
      name: input.name,
      budget: null,
      createdAt: this.#now().toISOString(),
    };
    await this.#store.createProject(project, {
      actor,
      action: 'project.created',
      target: project.id,
      details: { name: project.name },
    });
    return projectView(project);
  }

  async getProject(orgId: string, id: string): Promise<ProjectRecord> {
    const project = await this.#store.getProject(orgId, id);
    if (project === undefined) throw errors.notFound('project', id);
    return project;
  }

  async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectView>> {
    await this.getOrg(orgId);
    const result = await this.#store.listProjects(orgId, page);
    return { items: result.items.map(projectView), nextCursor: result.nextCursor };
  }

  /** Changes some of an org's limits; lowering one below usage makes new work wait, it stops nothing. */
  async setQuota(orgId: string, input: z.infer<typeof setQuotaSchema>, actor = 'admin'): Promise<OrgView> {
    const org = await this.getOrg(orgId);
    const quota = quotaSchema.parse({ ...org.quota, ...input });
    const updated = orgView(
      await this.#store.setQuota(orgId, quota, {
        actor,
        action: 'org.quota-changed',
        target: orgId,
        details: { from: org.quota, to: quota },
      }),
    );
    return updated;
  }

  /**
   * Sets the monthly budget of an org or (projectId) of one of its projects; null removes it. Lowering it
   * below what is already reserved and spent stops nothing: new reservations wait until it fits.
   */
  async setBudget(
    orgId: string,
    projectId: string | null,
    input: z.infer<typeof setBudgetSchema>,
    actor = 'admin',
  ): Promise<BudgetView> {
    const org = await this.getOrg(orgId);
    const before = projectId === null ? org.budget : (await this.getProject(orgId, projectId)).budget;
    const monthly = monthlyMicros(input.monthly);
    const month = monthOf(this.#now());
    await this.#store.setBudget(orgId, projectId, monthly, [month, nextMonth(month)], {
      actor,
      action: projectId === null ? 'org.budget-changed' : 'project.budget-changed',
      target: projectId ?? orgId,
      details: {
        from: before === null ? null : fromMicros(before),
        to: input.monthly,
      },
    });
    return budgetView(month, monthly, await this.#store.getLedger(orgId, projectId, month));
  }

  /** The org's default idle policy (null removes it); sandboxes created afterwards take it. */
  setIdlePolicy(orgId: string, policy: IdlePolicy | null, actor = 'admin'): Promise<OrgView> {
    return this.#setDefault(orgId, { field: 'idlePolicy', value: policy }, 'org.idle-policy-changed', actor);
  }

  /**
   * The org's default egress policy (null removes it): sandboxes created afterwards that name none, and
   * whose template names none, take it before the installation's default; the installation's deny-list
   * still holds (docs/network.md).
   */
  setNetworkPolicy(orgId: string, policy: NetworkPolicy | null, actor = 'admin'): Promise<OrgView> {
    return this.#setDefault(
      orgId,
      { field: 'networkPolicy', value: policy },
      'org.network-policy-changed',
      actor,
    );
  }

  /** One of the org's defaults for new sandboxes, audited with what it was and what it becomes. */
  async #setDefault(orgId: string, change: OrgDefault, action: string, actor: string): Promise<OrgView> {
    const org = await this.getOrg(orgId);
    await this.#store.setOrgDefault(orgId, change, {
      actor,
      action,
      target: orgId,
      details: { from: org[change.field], to: change.value },
    });
    return orgView({ ...org, [change.field]: change.value });
  }

  /** This month's budget of an org, or of one of its projects. */
  async budget(orgId: string, projectId: string | null): Promise<BudgetView> {
    const month = monthOf(this.#now());
    const [limit, ledger] = await Promise.all([
      projectId === null
        ? this.getOrg(orgId).then((org) => org.budget)
        : this.getProject(orgId, projectId).then((project) => project.budget),
      this.#store.getLedger(orgId, projectId, month),
    ]);
    return budgetView(month, limit, ledger);
  }

  /** What the org holds of its quota and budget; a key restricted to a project also sees that project's budget. */
  async usage(orgId: string, projectId: string | null = null) {
    const org = await this.getOrg(orgId);
    const month = monthOf(this.#now());
    const [usage, ledger, projectBudget] = await Promise.all([
      this.#store.getUsage(orgId),
      this.#store.getLedger(orgId, null, month),
      projectId === null ? undefined : this.budget(orgId, projectId),
    ]);
    const available = { ...usage };
    for (const { field, limit } of usageLimits) {
      available[field] = round(Math.max(0, org.quota[limit] - usage[field]));
    }
    return {
      orgId,
      quota: org.quota,
      usage,
      available,
      budget: budgetView(month, org.budget, ledger),
      ...(projectBudget !== undefined && { projectBudget }),
    };
  }
}
