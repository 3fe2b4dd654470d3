import type { z } from 'zod';
import { mintKeySecret } from './auth.ts';
import { errors } from './errors.ts';
import { newId } from './ids.ts';
import type { createKeySchema, createOrgSchema } from './schemas/tenancy.ts';
import { type KeyView, type OrgView, quotaSchema } from './schemas/tenancy.ts';
import type { Page, PageRequest, Store } from './store/port.ts';
import type { KeyRecord, OrgRecord } from './store/records.ts';

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

  constructor(store: Store, now: () => Date = () => new Date()) {
    this.#store = store;
    this.#now = now;
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
  ): Promise<KeyView & { key: string }> {
    await this.getOrg(orgId);
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
    return { ...keyView(record), key };
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyView>> {
    await this.getOrg(orgId);
    const result = await this.#store.listKeys(orgId, page);
    return { items: result.items.map(keyView), nextCursor: result.nextCursor };
  }

  async revokeKey(id: string, actor = 'admin'): Promise<KeyView> {
    return keyView(
      await this.#store.revokeKey(id, this.#now().toISOString(), {
        actor,
        action: 'key.revoked',
        target: id,
        details: {},
      }),
    );
  }
}
