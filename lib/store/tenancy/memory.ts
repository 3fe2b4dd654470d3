import type { AuditInput } from '../../audit/chain.ts';
import { emptyLedger, type Ledger } from '../../budgets/ledger.ts';
import { errors } from '../../errors.ts';
import { type Usage, zeroUsage } from '../../quotas/usage.ts';
import type { Quota } from '../../schemas/tenancy-parts.ts';
import { copy, ledgerKey, type MemoryState, paginate } from '../memory-state.ts';
import type { Page, PageRequest } from '../page.ts';
import type { KeyRecord, OrgRecord, ProjectRecord } from '../records.ts';
import { isWaiting, waitsOnPools } from '../sandboxes/port.ts';
import type { OrgDefault, ReadAlong, ReadAlongResult, TenancyStore } from './port.ts';

/** The tenancy aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memoryTenancy(s: MemoryState): TenancyStore {
  const part: TenancyStore = {
    async createOrg(org: OrgRecord, audit: AuditInput): Promise<void> {
      if (s.orgs.has(org.id)) throw errors.conflict(`org ${org.id} already exists`);
      s.orgs.set(org.id, structuredClone(org));
      s.usage.set(org.id, { ...zeroUsage });
      s.append(org.id, audit);
    },

    async getOrg(id: string): Promise<OrgRecord | undefined> {
      return copy(s.orgs.get(id));
    },

    async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
      return paginate([...s.orgs.values()], page);
    },

    async createKey(key: KeyRecord, audit: AuditInput): Promise<void> {
      if (!s.orgs.has(key.orgId)) throw errors.notFound('org', key.orgId);
      if (s.keys.has(key.id)) throw errors.conflict(`key ${key.id} already exists`);
      s.keys.set(key.id, structuredClone(key));
      s.append(key.orgId, audit);
    },

    async getKey(id: string): Promise<KeyRecord | undefined> {
      return copy(s.keys.get(id));
    },

    async getKeyWith(
      keyId: string,
      along: ReadAlong,
    ): Promise<{ key: KeyRecord | undefined; along: ReadAlongResult }> {
      return { key: await part.getKey(keyId), along: await part.readAlong(along) };
    },

    async readAlong(along: ReadAlong): Promise<ReadAlongResult> {
      const result: ReadAlongResult = {};
      if (along.org === true) result.org = (await part.getOrg(along.orgId)) ?? null;
      if (along.sandboxId !== undefined)
        result.sandbox = (await s.sandboxIn(along.orgId, along.sandboxId)) ?? null;
      if (along.waiting === true)
        result.waiting = [...s.sandboxes.values()].filter(
          (sandbox) => sandbox.orgId === along.orgId && isWaiting(sandbox.status),
        ).length;
      if (along.waitingOnPools === true)
        result.waitingOnPools = [...s.sandboxes.values()].filter(waitsOnPools).length;
      if (along.poolsVersion === true) result.poolsVersion = s.poolsVersion;
      return result;
    },

    async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
      return paginate(
        [...s.keys.values()].filter((key) => key.orgId === orgId),
        page,
      );
    },

    async revokeKey(id: string, at: string, audit: AuditInput): Promise<KeyRecord> {
      const key = s.keys.get(id);
      if (key === undefined) throw errors.notFound('key', id);
      if (key.revokedAt !== null) return structuredClone(key);
      const revoked = { ...key, revokedAt: at };
      s.keys.set(id, revoked);
      s.append(key.orgId, audit);
      return structuredClone(revoked);
    },

    async rotateKey(oldId: string, successor: KeyRecord, at: string, audit: AuditInput): Promise<void> {
      const old = s.keys.get(oldId);
      if (old === undefined) throw errors.notFound('key', oldId);
      if (old.revokedAt !== null)
        throw errors.invalidState(`key ${oldId} is revoked; create a new key instead`);
      if (s.keys.has(successor.id)) throw errors.conflict(`key ${successor.id} already exists`);
      s.keys.set(oldId, { ...old, revokedAt: at });
      s.keys.set(successor.id, structuredClone(successor));
      s.append(old.orgId, audit);
    },

    async setQuota(orgId: string, quota: Quota, audit: AuditInput): Promise<OrgRecord> {
      const org = s.orgs.get(orgId);
      if (org === undefined) throw errors.notFound('org', orgId);
      const updated = { ...org, quota: structuredClone(quota) };
      s.orgs.set(orgId, updated);
      s.append(orgId, audit);
      return structuredClone(updated);
    },

    async setOrgDefault(orgId: string, change: OrgDefault, audit: AuditInput): Promise<void> {
      const org = s.orgs.get(orgId);
      if (org === undefined) throw errors.notFound('org', orgId);
      s.orgs.set(orgId, { ...org, [change.field]: structuredClone(change.value) });
      s.append(orgId, audit);
    },

    async createProject(project: ProjectRecord, audit: AuditInput): Promise<void> {
      if (!s.orgs.has(project.orgId)) throw errors.notFound('org', project.orgId);
      if (s.projects.has(project.id)) throw errors.conflict(`project ${project.id} already exists`);
      s.projects.set(project.id, structuredClone(project));
      s.append(project.orgId, audit);
    },

    async getProject(orgId: string, id: string): Promise<ProjectRecord | undefined> {
      const project = s.projects.get(id);
      return project?.orgId === orgId ? structuredClone(project) : undefined;
    },

    async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>> {
      return paginate(
        [...s.projects.values()].filter((project) => project.orgId === orgId),
        page,
      );
    },

    async getUsage(orgId: string): Promise<Usage> {
      return { ...(s.usage.get(orgId) ?? zeroUsage) };
    },

    async setBudget(
      orgId: string,
      projectId: string | null,
      monthlyMicros: number | null,
      _months: string[],
      audit: AuditInput,
    ): Promise<void> {
      // One process, one map: the limit is read at each charge, so no headroom needs moving.
      const org = s.orgs.get(orgId);
      if (org === undefined) throw errors.notFound('org', orgId);
      if (projectId === null) {
        s.orgs.set(orgId, { ...org, budget: monthlyMicros });
      } else {
        const project = s.projects.get(projectId);
        if (project === undefined || project.orgId !== orgId) throw errors.notFound('project', projectId);
        s.projects.set(projectId, { ...project, budget: monthlyMicros });
      }
      s.append(orgId, audit);
    },

    async getLedger(orgId: string, projectId: string | null, month: string): Promise<Ledger> {
      return { ...(s.ledgers.get(ledgerKey(orgId, projectId, month)) ?? emptyLedger) };
    },
  };
  return part;
}
