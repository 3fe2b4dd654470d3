import { type AuditEvent, type AuditInput, type ChainHead, chainEvent, genesisHead } from '../audit/chain.ts';
import { chargeOf, ledgerChanges, type SandboxBilling } from '../budgets/billing.ts';
import { type BudgetScope, budgetExceeded, emptyLedger, type Ledger } from '../budgets/ledger.ts';
import { errors } from '../errors.ts';
import { newId } from '../ids.ts';
import { exceededQuota, round, type Usage, usageDelta, zeroUsage } from '../quotas/usage.ts';
import type { WebhookRecord } from '../schemas/webhooks.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { quotaExceeded } from './errors.ts';
import type { Page, PageRequest, UpdateSandboxOptions } from './port.ts';
import type {
  KeyRecord,
  OrgRecord,
  PlacementPolicy,
  PoolDownMark,
  PoolRecord,
  PoolView,
  ProjectRecord,
  SandboxRecord,
  SnapshotRecord,
} from './records.ts';

export interface IdempotencyRecord {
  requestHash: string;
  sandboxId: string;
  expiresAt: string;
}

/**
 * What every memory part (lib/store/<aggregate>/memory.ts) reads and writes: the tables, and the
 * accounting a sandbox write moves across aggregates (usage, pool slots, budget ledgers, the audit
 * chain). Each part's method checks every condition before it writes anything, with no await in
 * between, so each call is atomic just as a DynamoDB transaction is. Records are copied in and out so
 * callers can never mutate stored state.
 */
export class MemoryState {
  readonly installation = newId('installation');
  readonly orgs = new Map<string, OrgRecord>();
  readonly keys = new Map<string, KeyRecord>();
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly usage = new Map<string, Usage>();
  readonly poolUsage = new Map<string, number>();
  /** Budget ledgers by `orgId/projectId/month` (projectId empty for the org's own). */
  readonly ledgers = new Map<string, Ledger>();
  readonly activity = new Map<string, string>();
  readonly webhooks = new Map<string, WebhookRecord>();
  readonly audit = new Map<string, AuditEvent[]>();
  /** Kept apart from the events, as in DynamoDB, so a deleted last event is detected. */
  readonly heads = new Map<string, ChainHead>();
  readonly idempotency = new Map<string, IdempotencyRecord>();
  readonly leases = new Map<string, { owner: string; until: string }>();
  readonly snapshots = new Map<string, SnapshotRecord>();
  readonly poolDownMarks = new Map<string, PoolDownMark>();
  readonly projects = new Map<string, ProjectRecord>();
  readonly pools = new Map<string, PoolRecord>();
  readonly poolViews = new Map<string, PoolView>();
  policy: PlacementPolicy | undefined;
  poolsVersion: string | null = null;
  readonly now: () => Date;
  readonly onLinking: ((events: AuditEvent[]) => Promise<void>) | undefined;

  constructor(options: { now?: () => Date; onLinking?: (events: AuditEvent[]) => Promise<void> }) {
    this.now = options.now ?? (() => new Date());
    this.onLinking = options.onLinking;
  }

  /** A sandbox of an org, copied (undefined for another org's). */
  sandboxIn(orgId: string, id: string): SandboxRecord | undefined {
    const sandbox = this.sandboxes.get(id);
    return sandbox?.orgId === orgId ? structuredClone(sandbox) : undefined;
  }

  /**
   * Checks then applies the usage change of a sandbox moving from `from` to `to` (`'new'`: a sandbox
   * being created, which held nothing); throws before any write.
   */
  applyUsage(from: SandboxRecord | 'new', to: SandboxRecord, options: UpdateSandboxOptions): void {
    const delta = usageDelta(
      from === 'new' ? { status: 'queued', resources: to.resources, pool: null } : from,
      to,
    );
    const usage = this.usage.get(to.orgId) ?? { ...zeroUsage };
    const org = this.orgs.get(to.orgId);
    if (org !== undefined) {
      const over = exceededQuota(usage, delta.org, org.quota);
      if (over !== undefined) throw quotaExceeded(over);
    }
    for (const [pool, change] of Object.entries(delta.pools)) {
      const limit = pool === to.pool ? (options.poolLimit ?? 0) : 0;
      if (change > 0 && limit > 0 && (this.poolUsage.get(pool) ?? 0) + change > limit) {
        throw errors.insufficientCapacity(`pool ${pool} is at its concurrency limit of ${limit}`, {
          pool,
          limit,
        });
      }
    }
    const budgetChanges = this.budgetChanges(from === 'new' ? null : from.billing, to);
    for (const { key, ledger } of budgetChanges) this.ledgers.set(key, ledger);
    this.usage.set(to.orgId, {
      cpu: round(usage.cpu + delta.org.cpu),
      memoryMiB: usage.memoryMiB + delta.org.memoryMiB,
      diskGiB: usage.diskGiB + delta.org.diskGiB,
      sandboxes: usage.sandboxes + delta.org.sandboxes,
      snapshots: usage.snapshots,
    });
    for (const [pool, change] of Object.entries(delta.pools)) {
      this.poolUsage.set(pool, (this.poolUsage.get(pool) ?? 0) + change);
    }
  }

  /** The ledgers a sandbox's billing change leaves, checked against each budget; throws before any write. */
  budgetChanges(from: SandboxBilling | null, to: SandboxRecord): { key: string; ledger: Ledger }[] {
    const result: { key: string; ledger: Ledger }[] = [];
    for (const change of ledgerChanges(from, to.billing)) {
      const scopes: { scope: BudgetScope; projectId: string | null; limit: number | null }[] = [
        { scope: 'org', projectId: null, limit: this.orgs.get(to.orgId)?.budget ?? null },
      ];
      if (to.projectId !== null) {
        const limit = this.projects.get(to.projectId)?.budget ?? null;
        scopes.push({ scope: 'project', projectId: to.projectId, limit });
      }
      for (const { scope, projectId, limit } of scopes) {
        const key = ledgerKey(to.orgId, projectId, change.month);
        const ledger = this.ledgers.get(key) ?? emptyLedger;
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

  append(orgId: string, input: AuditInput): AuditEvent {
    const events = this.audit.get(orgId) ?? [];
    const head = this.heads.get(orgId) ?? genesisHead;
    const event = chainEvent(orgId, head, structuredClone(input), this.now().toISOString());
    events.push(event);
    this.audit.set(orgId, events);
    this.heads.set(orgId, { seq: event.seq, hash: event.hash });
    // In-process only (dev mode): the hook logs and records; it cannot lose what is already stored.
    this.onLinking?.([structuredClone(event)]).catch(() => undefined);
    return event;
  }
}

export function ledgerKey(orgId: string, projectId: string | null, month: string): string {
  return `${orgId}/${projectId ?? ''}/${month}`;
}

export function copy<T>(value: T | undefined): T | undefined {
  return value === undefined ? undefined : structuredClone(value);
}

/** Ids are ULID-prefixed, so id order is creation order unless another sort key is given. */
export function paginate<T extends { id: string }>(
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
