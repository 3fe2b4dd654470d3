import { type AuditEvent, type AuditInput, type ChainHead, chainEvent, genesisHead } from '../audit/chain.ts';
import { chargeOf, ledgerChanges, type SandboxBilling } from '../budgets/billing.ts';
import { type BudgetScope, budgetExceeded, emptyLedger, type Ledger } from '../budgets/ledger.ts';
import { errors } from '../errors.ts';
import { newId, newUlid } from '../ids.ts';
import { exceededQuota, round, type Usage, usageDelta, zeroUsage } from '../quotas/usage.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import type { IdlePolicy } from '../schemas/sandboxes.ts';
import type { Quota } from '../schemas/tenancy.ts';
import type { WebhookRecord } from '../schemas/webhooks.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { idempotencyMismatch, quotaExceeded, waitingExceeded, webhooksExceeded } from './errors.ts';
import {
  type CreateSandboxResult,
  dueKeyOf,
  type IdempotencyClaim,
  indexedStatuses,
  installationChain,
  isWaiting,
  type Page,
  type PageRequest,
  type PoolsState,
  type ReadAlong,
  type ReadAlongResult,
  type SandboxFilter,
  type SandboxPatch,
  type SnapshotSettlement,
  type Store,
  snapshotHoldsSlot,
  type UpdateSandboxOptions,
} from './port.ts';
import {
  type KeyRecord,
  type OrgRecord,
  type PlacementPolicy,
  type PoolDownMark,
  type PoolRecord,
  type PoolView,
  type ProjectRecord,
  type SandboxRecord,
  type SnapshotRecord,
  withDownMarks,
} from './records.ts';

interface IdempotencyRecord {
  requestHash: string;
  sandboxId: string;
  expiresAt: string;
}

/**
 * The in-memory store for dev mode and tests. Each method checks every condition before it writes
 * anything, with no await in between, so each call is atomic just as a DynamoDB transaction is.
 * Records are copied in and out so callers can never mutate stored state.
 */
export class MemoryStore implements Store {
  readonly #installation = newId('installation');
  readonly #orgs = new Map<string, OrgRecord>();
  readonly #keys = new Map<string, KeyRecord>();
  readonly #sandboxes = new Map<string, SandboxRecord>();
  readonly #usage = new Map<string, Usage>();
  readonly #poolUsage = new Map<string, number>();
  /** Budget ledgers by `orgId/projectId/month` (projectId empty for the org's own). */
  readonly #ledgers = new Map<string, Ledger>();
  readonly #activity = new Map<string, string>();
  readonly #webhooks = new Map<string, WebhookRecord>();
  readonly #audit = new Map<string, AuditEvent[]>();
  /** Kept apart from the events, as in DynamoDB, so a deleted last event is detected. */
  readonly #heads = new Map<string, ChainHead>();
  readonly #idempotency = new Map<string, IdempotencyRecord>();
  readonly #leases = new Map<string, { owner: string; until: string }>();
  readonly #snapshots = new Map<string, SnapshotRecord>();
  readonly #poolDownMarks = new Map<string, PoolDownMark>();
  readonly #projects = new Map<string, ProjectRecord>();
  readonly #pools = new Map<string, PoolRecord>();
  readonly #poolViews = new Map<string, PoolView>();
  #policy: PlacementPolicy | undefined;
  #poolsVersion: string | null = null;
  readonly #now: () => Date;

  readonly #onLinking: ((events: AuditEvent[]) => Promise<void>) | undefined;

  /** `onLinking` sees every event as it is chained (here, as it is written): the local event hook. */
  constructor(options: { now?: () => Date; onLinking?: (events: AuditEvent[]) => Promise<void> } = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#onLinking = options.onLinking;
  }

  async installation(): Promise<string> {
    return this.#installation;
  }

  async createOrg(org: OrgRecord, audit: AuditInput): Promise<void> {
    if (this.#orgs.has(org.id)) throw errors.conflict(`org ${org.id} already exists`);
    this.#orgs.set(org.id, structuredClone(org));
    this.#usage.set(org.id, { ...zeroUsage });
    this.#append(org.id, audit);
  }

  async getOrg(id: string): Promise<OrgRecord | undefined> {
    return copy(this.#orgs.get(id));
  }

  async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
    return paginate([...this.#orgs.values()], page);
  }

  async createKey(key: KeyRecord, audit: AuditInput): Promise<void> {
    if (!this.#orgs.has(key.orgId)) throw errors.notFound('org', key.orgId);
    if (this.#keys.has(key.id)) throw errors.conflict(`key ${key.id} already exists`);
    this.#keys.set(key.id, structuredClone(key));
    this.#append(key.orgId, audit);
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    return copy(this.#keys.get(id));
  }

  async getKeyWith(
    keyId: string,
    along: ReadAlong,
  ): Promise<{ key: KeyRecord | undefined; along: ReadAlongResult }> {
    return { key: await this.getKey(keyId), along: await this.readAlong(along) };
  }

  async readAlong(along: ReadAlong): Promise<ReadAlongResult> {
    const result: ReadAlongResult = {};
    if (along.org === true) result.org = (await this.getOrg(along.orgId)) ?? null;
    if (along.sandboxId !== undefined)
      result.sandbox = (await this.getSandbox(along.orgId, along.sandboxId)) ?? null;
    if (along.waiting === true)
      result.waiting = [...this.#sandboxes.values()].filter(
        (sandbox) => sandbox.orgId === along.orgId && isWaiting(sandbox.status),
      ).length;
    if (along.poolsVersion === true) result.poolsVersion = this.#poolsVersion;
    return result;
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
    return paginate(
      [...this.#keys.values()].filter((key) => key.orgId === orgId),
      page,
    );
  }

  async revokeKey(id: string, at: string, audit: AuditInput): Promise<KeyRecord> {
    const key = this.#keys.get(id);
    if (key === undefined) throw errors.notFound('key', id);
    if (key.revokedAt !== null) return structuredClone(key);
    const revoked = { ...key, revokedAt: at };
    this.#keys.set(id, revoked);
    this.#append(key.orgId, audit);
    return structuredClone(revoked);
  }

  async rotateKey(oldId: string, successor: KeyRecord, at: string, audit: AuditInput): Promise<void> {
    const old = this.#keys.get(oldId);
    if (old === undefined) throw errors.notFound('key', oldId);
    if (old.revokedAt !== null)
      throw errors.invalidState(`key ${oldId} is revoked; create a new key instead`);
    if (this.#keys.has(successor.id)) throw errors.conflict(`key ${successor.id} already exists`);
    this.#keys.set(oldId, { ...old, revokedAt: at });
    this.#keys.set(successor.id, structuredClone(successor));
    this.#append(old.orgId, audit);
  }

  async setBudget(
    orgId: string,
    projectId: string | null,
    monthlyMicros: number | null,
    _months: string[],
    audit: AuditInput,
  ): Promise<void> {
    // One process, one map: the limit is read at each charge, so no headroom needs moving.
    const org = this.#orgs.get(orgId);
    if (org === undefined) throw errors.notFound('org', orgId);
    if (projectId === null) {
      this.#orgs.set(orgId, { ...org, budget: monthlyMicros });
    } else {
      const project = this.#projects.get(projectId);
      if (project === undefined || project.orgId !== orgId) throw errors.notFound('project', projectId);
      this.#projects.set(projectId, { ...project, budget: monthlyMicros });
    }
    this.#append(orgId, audit);
  }

  async getLedger(orgId: string, projectId: string | null, month: string): Promise<Ledger> {
    return { ...(this.#ledgers.get(ledgerKey(orgId, projectId, month)) ?? emptyLedger) };
  }

  async setQuota(orgId: string, quota: Quota, audit: AuditInput): Promise<OrgRecord> {
    const org = this.#orgs.get(orgId);
    if (org === undefined) throw errors.notFound('org', orgId);
    const updated = { ...org, quota: structuredClone(quota) };
    this.#orgs.set(orgId, updated);
    this.#append(orgId, audit);
    return structuredClone(updated);
  }

  async setIdlePolicy(orgId: string, policy: IdlePolicy | null, audit: AuditInput): Promise<void> {
    const org = this.#orgs.get(orgId);
    if (org === undefined) throw errors.notFound('org', orgId);
    this.#orgs.set(orgId, { ...org, idlePolicy: structuredClone(policy) });
    this.#append(orgId, audit);
  }

  async createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void> {
    if (!this.#orgs.has(webhook.orgId)) throw errors.notFound('org', webhook.orgId);
    // Counted and written in one step (no await between): concurrent registrations cannot both fit.
    const count = [...this.#webhooks.values()].filter((each) => each.orgId === webhook.orgId).length;
    if (count >= max) throw webhooksExceeded(max);
    this.#webhooks.set(webhook.id, structuredClone(webhook));
    this.#append(webhook.orgId, audit);
  }

  async getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined> {
    const webhook = this.#webhooks.get(id);
    return webhook?.orgId === orgId ? structuredClone(webhook) : undefined;
  }

  async listWebhooks(orgId: string): Promise<WebhookRecord[]> {
    return [...this.#webhooks.values()]
      .filter((webhook) => webhook.orgId === orgId)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((webhook) => structuredClone(webhook));
  }

  async updateWebhookSecrets(
    current: WebhookRecord,
    secrets: WebhookRecord['secrets'],
    audit: AuditInput,
  ): Promise<void> {
    const stored = this.#webhooks.get(current.id);
    if (stored === undefined || stored.orgId !== current.orgId) throw errors.notFound('webhook', current.id);
    if (JSON.stringify(stored.secrets) !== JSON.stringify(current.secrets)) {
      throw errors.conflict(`webhook ${current.id} changed since it was read`);
    }
    this.#webhooks.set(current.id, { ...stored, secrets: structuredClone(secrets) });
    this.#append(current.orgId, audit);
  }

  async deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void> {
    const stored = this.#webhooks.get(id);
    if (stored === undefined || stored.orgId !== orgId) throw errors.notFound('webhook', id);
    this.#webhooks.delete(id);
    this.#append(orgId, audit);
  }

  async createProject(project: ProjectRecord, audit: AuditInput): Promise<void> {
    if (!this.#orgs.has(project.orgId)) throw errors.notFound('org', project.orgId);
    if (this.#projects.has(project.id)) throw errors.conflict(`project ${project.id} already exists`);
    this.#projects.set(project.id, structuredClone(project));
    this.#append(project.orgId, audit);
  }

  async getProject(orgId: string, id: string): Promise<ProjectRecord | undefined> {
    const project = this.#projects.get(id);
    return project?.orgId === orgId ? structuredClone(project) : undefined;
  }

  async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>> {
    return paginate(
      [...this.#projects.values()].filter((project) => project.orgId === orgId),
      page,
    );
  }

  async putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void> {
    const exists = this.#pools.has(pool.name);
    if (mode === 'create' && exists)
      throw errors.conflict(`pool ${pool.name} already exists`, { pool: pool.name });
    if (mode === 'replace' && !exists) throw errors.notFound('pool', pool.name);
    this.#pools.set(pool.name, structuredClone(pool));
    this.#poolsVersion = newUlid();
    this.#append(installationChain, audit);
  }

  async getPool(name: string): Promise<PoolRecord | undefined> {
    return copy(this.#pools.get(name));
  }

  async listPools(): Promise<PoolRecord[]> {
    return [...this.#pools.values()].map((pool) => structuredClone(pool));
  }

  async deletePool(name: string, audit: AuditInput): Promise<void> {
    if (!this.#pools.delete(name)) throw errors.notFound('pool', name);
    this.#poolViews.delete(name);
    this.#poolDownMarks.delete(name);
    this.#poolsVersion = newUlid();
    this.#append(installationChain, audit);
  }

  async putPoolView(view: PoolView): Promise<void> {
    const { downSince: _since, downReason: _reason, ...probed } = view;
    this.#poolViews.set(view.pool, structuredClone({ ...probed, downSince: null, downReason: null }));
    this.#poolsVersion = newUlid();
  }

  async markPoolDown(pool: string, at: string, reason: string): Promise<void> {
    const known = this.#poolDownMarks.get(pool);
    if (known === undefined || known.at < at) {
      this.#poolDownMarks.set(pool, { pool, at, reason });
      this.#poolsVersion = newUlid();
    }
  }

  async listPoolViews(): Promise<PoolView[]> {
    return structuredClone(withDownMarks([...this.#poolViews.values()], this.#poolDownMarks));
  }

  async getPolicy(): Promise<PlacementPolicy | undefined> {
    return copy(this.#policy);
  }

  async putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void> {
    this.#policy = structuredClone(policy);
    this.#poolsVersion = newUlid();
    this.#append(installationChain, audit);
  }

  async readPools(): Promise<PoolsState> {
    return {
      pools: await this.listPools(),
      views: await this.listPoolViews(),
      policy: await this.getPolicy(),
      version: this.#poolsVersion,
    };
  }

  async getUsage(orgId: string): Promise<Usage> {
    return { ...(this.#usage.get(orgId) ?? zeroUsage) };
  }

  async getPoolUsage(pool: string): Promise<number> {
    return this.#poolUsage.get(pool) ?? 0;
  }

  async createSandbox(
    sandbox: SandboxRecord,
    audit: AuditInput,
    idempotency?: IdempotencyClaim,
    options: { maxWaiting?: number } = {},
  ): Promise<CreateSandboxResult> {
    if (!this.#orgs.has(sandbox.orgId)) throw errors.notFound('org', sandbox.orgId);
    const slot = idempotency === undefined ? undefined : `${sandbox.orgId}/${idempotency.key}`;
    if (idempotency !== undefined && slot !== undefined) {
      const existing = this.#idempotency.get(slot);
      if (existing !== undefined && existing.expiresAt > this.#now().toISOString()) {
        if (existing.requestHash !== idempotency.requestHash) throw idempotencyMismatch(idempotency.key);
        const first = this.#sandboxes.get(existing.sandboxId);
        if (first !== undefined) return { sandbox: structuredClone(first), replayed: true };
      }
    }
    if (options.maxWaiting !== undefined) {
      let waiting = 0;
      for (const other of this.#sandboxes.values())
        if (other.orgId === sandbox.orgId && isWaiting(other.status)) waiting++;
      if (waiting >= options.maxWaiting) throw waitingExceeded(options.maxWaiting);
    }
    if (idempotency !== undefined && slot !== undefined) {
      this.#idempotency.set(slot, {
        requestHash: idempotency.requestHash,
        sandboxId: sandbox.id,
        expiresAt: idempotency.expiresAt,
      });
    }
    if (this.#sandboxes.has(sandbox.id)) throw errors.conflict(`sandbox ${sandbox.id} already exists`);
    this.#applyUsage('new', sandbox, {});
    this.#sandboxes.set(sandbox.id, structuredClone(sandbox));
    this.#append(sandbox.orgId, audit);
    return { sandbox: structuredClone(sandbox), replayed: false };
  }

  async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
    const sandbox = this.#sandboxes.get(id);
    return sandbox?.orgId === orgId ? structuredClone(sandbox) : undefined;
  }

  async listQueued(orgId: string, limit: number): Promise<SandboxRecord[]> {
    return [...this.#sandboxes.values()]
      .filter((sandbox) => sandbox.orgId === orgId && sandbox.status === 'queued')
      .sort((a, b) => (dueKeyOf(a) < dueKeyOf(b) ? -1 : 1))
      .slice(0, limit)
      .map((sandbox) => structuredClone(sandbox));
  }

  async listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>> {
    const matches = [...this.#sandboxes.values()].filter(
      (sandbox) =>
        sandbox.orgId === orgId &&
        (filter.status === undefined || sandbox.status === filter.status) &&
        (filter.projectId === undefined || sandbox.projectId === filter.projectId) &&
        Object.entries(filter.labels ?? {}).every(([key, value]) => sandbox.labels[key] === value),
    );
    return paginate(matches, page);
  }

  async listSandboxesByStatus(
    status: SandboxStatus,
    page: PageRequest,
    options: { dueBefore?: string } = {},
  ): Promise<Page<SandboxRecord>> {
    if (!indexedStatuses.has(status)) return { items: [], nextCursor: null };
    const before = options.dueBefore;
    const matches = [...this.#sandboxes.values()].filter(
      (sandbox) => sandbox.status === status && (before === undefined || dueKeyOf(sandbox) < before),
    );
    return paginate(matches, page, dueKeyOf);
  }

  async listSandboxesByPool(pool: string, page: PageRequest): Promise<Page<SandboxRecord>> {
    const matches = [...this.#sandboxes.values()].filter(
      (sandbox) => sandbox.pool === pool && indexedStatuses.has(sandbox.status),
    );
    return paginate(matches, page);
  }

  async findSandbox(id: string): Promise<SandboxRecord | undefined> {
    return copy(this.#sandboxes.get(id));
  }

  async acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean> {
    const held = this.#leases.get(name);
    if (held !== undefined && held.owner !== owner && held.until > now) return false;
    this.#leases.set(name, { owner, until });
    return true;
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    if (this.#leases.get(name)?.owner === owner) this.#leases.delete(name);
  }

  async linkAudit(): Promise<void> {
    // Events are chained as they are written: nothing waits.
  }

  async updateSandbox(
    current: SandboxRecord,
    patch: SandboxPatch,
    options: UpdateSandboxOptions = {},
  ): Promise<SandboxRecord> {
    const stored = this.#sandboxes.get(current.id);
    if (stored === undefined || stored.orgId !== current.orgId) throw errors.notFound('sandbox', current.id);
    if (stored.version !== current.version || stored.status !== current.status) {
      throw errors.conflict(`sandbox ${current.id} changed since it was read`, {
        expected: { version: current.version, status: current.status },
        actual: { version: stored.version, status: stored.status },
      });
    }
    const next: SandboxRecord = { ...stored, ...structuredClone(patch), version: stored.version + 1 };
    this.#applyUsage(stored, next, options);
    this.#sandboxes.set(next.id, next);
    if (options.audit !== undefined) this.#append(next.orgId, options.audit);
    return structuredClone(next);
  }

  async touchSandbox(orgId: string, id: string, at: string): Promise<string | undefined> {
    const key = `${orgId}/${id}`;
    const last = this.#activity.get(key);
    if (last !== undefined && last >= at) return at;
    this.#activity.set(key, at);
    return last;
  }

  async lastActivity(orgId: string, id: string): Promise<string | undefined> {
    return this.#activity.get(`${orgId}/${id}`);
  }

  async createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void> {
    const org = this.#orgs.get(snapshot.orgId);
    if (org === undefined) throw errors.notFound('org', snapshot.orgId);
    if (this.#snapshots.has(snapshot.id)) throw errors.conflict(`snapshot ${snapshot.id} already exists`);
    const usage = this.#usage.get(snapshot.orgId) ?? { ...zeroUsage };
    const over = exceededQuota(usage, { snapshots: 1 }, org.quota);
    if (over !== undefined) throw quotaExceeded(over);
    this.#usage.set(snapshot.orgId, { ...usage, snapshots: usage.snapshots + 1 });
    this.#snapshots.set(snapshot.id, structuredClone(snapshot));
    this.#append(snapshot.orgId, audit);
  }

  async getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined> {
    const snapshot = this.#snapshots.get(id);
    return snapshot?.orgId === orgId ? structuredClone(snapshot) : undefined;
  }

  async listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>> {
    return paginate(
      [...this.#snapshots.values()].filter((snapshot) => snapshot.orgId === orgId),
      page,
    );
  }

  async settleSnapshot(
    current: SnapshotRecord,
    patch: SnapshotSettlement,
    audit: AuditInput,
  ): Promise<SnapshotRecord> {
    const stored = this.#snapshots.get(current.id);
    if (stored === undefined || stored.orgId !== current.orgId) throw errors.notFound('snapshot', current.id);
    if (stored.status !== 'creating') {
      throw errors.conflict(`snapshot ${current.id} is ${stored.status}, no longer creating`);
    }
    const next: SnapshotRecord = { ...stored, ...structuredClone(patch) };
    if (patch.status === 'failed') {
      const usage = this.#usage.get(current.orgId) ?? { ...zeroUsage };
      this.#usage.set(current.orgId, { ...usage, snapshots: usage.snapshots - 1 });
    }
    this.#snapshots.set(next.id, next);
    this.#append(next.orgId, audit);
    return structuredClone(next);
  }

  async deleteSnapshot(orgId: string, id: string, audit: AuditInput): Promise<SnapshotRecord> {
    const snapshot = this.#snapshots.get(id);
    if (snapshot === undefined || snapshot.orgId !== orgId) throw errors.notFound('snapshot', id);
    const usage = this.#usage.get(orgId) ?? { ...zeroUsage };
    // A failed snapshot gave its slot back when it failed.
    if (snapshotHoldsSlot(snapshot)) this.#usage.set(orgId, { ...usage, snapshots: usage.snapshots - 1 });
    this.#snapshots.delete(id);
    this.#append(orgId, audit);
    return structuredClone(snapshot);
  }

  async appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
    return structuredClone(this.#append(orgId, audit));
  }

  async auditHead(orgId: string): Promise<ChainHead> {
    return { ...(this.#heads.get(orgId) ?? genesisHead) };
  }

  async listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
    const events = this.#audit.get(orgId) ?? [];
    const after = Number(decodeCursor(page.cursor) ?? '0');
    const slice = events.filter((event) => event.seq > after).slice(0, page.limit);
    const last = slice.at(-1);
    const more = last !== undefined && events.some((event) => event.seq > last.seq);
    return { items: structuredClone(slice), nextCursor: more ? encodeCursor(String(last.seq)) : null };
  }

  /** Test hook: the stored events of a chain, for tampering tests. */
  rawAudit(orgId: string): AuditEvent[] {
    return this.#audit.get(orgId) ?? [];
  }

  /**
   * Checks then applies the usage change of a sandbox moving from `from` to `to` (`'new'`: a sandbox
   * being created, which held nothing); throws before any write.
   */
  #applyUsage(from: SandboxRecord | 'new', to: SandboxRecord, options: UpdateSandboxOptions): void {
    const delta = usageDelta(
      from === 'new' ? { status: 'queued', resources: to.resources, pool: null } : from,
      to,
    );
    const usage = this.#usage.get(to.orgId) ?? { ...zeroUsage };
    const org = this.#orgs.get(to.orgId);
    if (org !== undefined) {
      const over = exceededQuota(usage, delta.org, org.quota);
      if (over !== undefined) throw quotaExceeded(over);
    }
    for (const [pool, change] of Object.entries(delta.pools)) {
      const limit = pool === to.pool ? (options.poolLimit ?? 0) : 0;
      if (change > 0 && limit > 0 && (this.#poolUsage.get(pool) ?? 0) + change > limit) {
        throw errors.insufficientCapacity(`pool ${pool} is at its concurrency limit of ${limit}`, {
          pool,
          limit,
        });
      }
    }
    const budgetChanges = this.#budgetChanges(from === 'new' ? null : from.billing, to);
    for (const { key, ledger } of budgetChanges) this.#ledgers.set(key, ledger);
    this.#usage.set(to.orgId, {
      cpu: round(usage.cpu + delta.org.cpu),
      memoryMiB: usage.memoryMiB + delta.org.memoryMiB,
      diskGiB: usage.diskGiB + delta.org.diskGiB,
      sandboxes: usage.sandboxes + delta.org.sandboxes,
      snapshots: usage.snapshots,
    });
    for (const [pool, change] of Object.entries(delta.pools)) {
      this.#poolUsage.set(pool, (this.#poolUsage.get(pool) ?? 0) + change);
    }
  }

  /** The ledgers a sandbox's billing change leaves, checked against each budget; throws before any write. */
  #budgetChanges(from: SandboxBilling | null, to: SandboxRecord): { key: string; ledger: Ledger }[] {
    const result: { key: string; ledger: Ledger }[] = [];
    for (const change of ledgerChanges(from, to.billing)) {
      const scopes: { scope: BudgetScope; projectId: string | null; limit: number | null }[] = [
        { scope: 'org', projectId: null, limit: this.#orgs.get(to.orgId)?.budget ?? null },
      ];
      if (to.projectId !== null) {
        const limit = this.#projects.get(to.projectId)?.budget ?? null;
        scopes.push({ scope: 'project', projectId: to.projectId, limit });
      }
      for (const { scope, projectId, limit } of scopes) {
        const key = ledgerKey(to.orgId, projectId, change.month);
        const ledger = this.#ledgers.get(key) ?? emptyLedger;
        const used = ledger.reserved + ledger.spent;
        const charge = chargeOf(change);
        if (charge > 0 && limit !== null && used + charge > limit) {
          throw budgetExceeded({ scope, month: change.month, limit, used, requested: charge });
        }
        result.push({
          key,
          ledger: { reserved: ledger.reserved + change.reserved, spent: ledger.spent + change.spent },
        });
      }
    }
    return result;
  }

  #append(orgId: string, input: AuditInput): AuditEvent {
    const events = this.#audit.get(orgId) ?? [];
    const head = this.#heads.get(orgId) ?? genesisHead;
    const event = chainEvent(orgId, head, structuredClone(input), this.#now().toISOString());
    events.push(event);
    this.#audit.set(orgId, events);
    this.#heads.set(orgId, { seq: event.seq, hash: event.hash });
    // In-process only (dev mode): the hook logs and records; it cannot lose what is already stored.
    this.#onLinking?.([structuredClone(event)]).catch(() => undefined);
    return event;
  }
}

function ledgerKey(orgId: string, projectId: string | null, month: string): string {
  return `${orgId}/${projectId ?? ''}/${month}`;
}

function copy<T>(value: T | undefined): T | undefined {
  return value === undefined ? undefined : structuredClone(value);
}

/** Ids are ULID-prefixed, so id order is creation order unless another sort key is given. */
function paginate<T extends { id: string }>(
  items: T[],
  page: PageRequest,
  sortKey: (item: T) => string = (item) => item.id,
): Page<T> {
  const after = decodeCursor(page.cursor);
  const sorted = items
    .map((item) => ({ item, key: sortKey(item) }))
    .filter(({ key }) => after === undefined || key > after)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const slice = sorted.slice(0, page.limit);
  const last = slice.at(-1);
  return {
    items: slice.map(({ item }) => structuredClone(item)),
    nextCursor: sorted.length > page.limit && last !== undefined ? encodeCursor(last.key) : null,
  };
}
