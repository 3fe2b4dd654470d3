import type * as z from 'zod';
import { errors } from '../errors.ts';
import { newId } from '../ids.ts';
import type {
  createKeySchema,
  createOrgSchema,
  createProjectSchema,
  setQuotaSchema,
} from '../schemas/tenancy.ts';
import { type KeyView, type OrgView, type ProjectView, quotaSchema } from '../schemas/tenancy.ts';
import type { Page, PageRequest, Store } from '../store/port.ts';
import type { KeyRecord, OrgRecord, ProjectRecord } from '../store/records.ts';
import { e2bKeyForm, mintKeySecret } from './auth.ts';
import { round, usageLimits } from './quota.ts';

export function orgView(org: OrgRecord): OrgView {
  return { id: org.id, name: org.name, quota: org.quota, createdAt: org.createdAt };
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
  readonly #store: Store;
  readonly #now: () => Date;

  constructor(deps: { store: Store; now?: (() => Date) | undefined }) {
    this.#store = deps.store;
    this.#now = deps.now ?? (() => new Date());
  }

  async createOrg(input: z.infer<typeof createOrgSchema>, actor = 'admin'): Promise<OrgView> {
    const org: OrgRecord = {
      id: newId('org'),
      name: input.name,
      quota: quotaSchema.parse(input.quota ?? {}),
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
      createdAt: this.#now().toISOString(),
    };
    await this.#store.createProject(project, {
      actor,
      action: 'project.created',
      target: project.id,
      details: { name: project.name },
    });
    return project;
  }

  async getProject(orgId: string, id: string): Promise<ProjectRecord> {
    const project = await this.#store.getProject(orgId, id);
    if (project === undefined) throw errors.notFound('project', id);
    return project;
  }

  async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectView>> {
    await this.getOrg(orgId);
    return this.#store.listProjects(orgId, page);
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

  async usage(orgId: string) {
    const org = await this.getOrg(orgId);
    const usage = await this.#store.getUsage(orgId);
    const available = { ...usage };
    for (const { field, limit } of usageLimits) {
      available[field] = round(Math.max(0, org.quota[limit] - usage[field]));
    }
    return { orgId, quota: org.quota, usage, available };
  }
}
