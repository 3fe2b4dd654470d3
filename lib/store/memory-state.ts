import { type AuditEvent, type AuditInput, type ChainHead, chainEvent, genesisHead } from '../audit/chain.ts';
import { chargeOf } from '../budgets/billing.ts';
import { type BudgetScope, budgetExceeded, emptyLedger, type Ledger } from '../budgets/ledger.ts';
import { newId } from '../ids.ts';
import { exceededQuota, round, type Usage, zeroUsage } from '../quotas/usage.ts';
import type { WebhookDeliveryStatus, WebhookRecord } from '../schemas/webhooks.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { poolAtLimit, quotaExceeded } from './errors.ts';
import type { Page, PageRequest } from './page.ts';
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
  WarmRecord,
} from './records.ts';
import type { SandboxWriteEffects } from './sandboxes/write-effects.ts';

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
  /** Delivery records by `orgId#deliverySortKey` (kept for the run: the memory store has no TTL). */
  readonly deliveries = new Map<string, WebhookDeliveryStatus>();
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
  /** Warm instances by id (lib/store/warm/). */
  readonly warm = new Map<string, WarmRecord>();
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
   * Executes a sandbox write's effects (lib/store/sandboxes/write-effects.ts): checks every limit they
   * meet (the org's quota, a pool's concurrency, each budget), then applies them; throws before any
   * write. The waiting count is not kept: memory counts waiting records when it needs the number.
   */
  applyEffects(effects: SandboxWriteEffects): void {
    const usage = this.usage.get(effects.orgId) ?? { ...zeroUsage };
    const org = this.orgs.get(effects.orgId);
    if (org !== undefined) {
      const over = exceededQuota(usage, effects.usage, org.quota);
      if (over !== undefined) throw quotaExceeded(over);
    }
    for (const { pool, change, limit } of effects.poolSlots) {
      if (change > 0 && limit > 0 && (this.poolUsage.get(pool) ?? 0) + change > limit) {
        throw poolAtLimit(pool, limit);
      }
    }
    const ledgers = this.ledgersAfter(effects);
    for (const { key, ledger } of ledgers) this.ledgers.set(key, ledger);
    this.usage.set(effects.orgId, {
      cpu: round(usage.cpu + effects.usage.cpu),
      memoryMiB: usage.memoryMiB + effects.usage.memoryMiB,
      diskGiB: usage.diskGiB + effects.usage.diskGiB,
      sandboxes: usage.sandboxes + effects.usage.sandboxes,
      snapshots: usage.snapshots,
    });
    for (const { pool, change } of effects.poolSlots) {
      this.poolUsage.set(pool, (this.poolUsage.get(pool) ?? 0) + change);
    }
  }

  /** The ledgers a write's budget changes leave, each charge checked against its budget; throws first. */
  ledgersAfter(effects: SandboxWriteEffects): { key: string; ledger: Ledger }[] {
    const result: { key: string; ledger: Ledger }[] = [];
    // One month's changes to one ledger build on each other.
    const pending = new Map<string, Ledger>();
    for (const { owner, change } of effects.ledgers) {
      const limit =
        owner.projectId === null
          ? (this.orgs.get(owner.orgId)?.budget ?? null)
          : (this.projects.get(owner.projectId)?.budget ?? null);
      const scope: BudgetScope = owner.projectId === null ? 'org' : 'project';
      const key = ledgerKey(owner.orgId, owner.projectId, change.month);
      const ledger = pending.get(key) ?? this.ledgers.get(key) ?? emptyLedger;
      const used = ledger.reserved + ledger.spent;
      const charge = chargeOf(change);
      if (charge > 0 && limit !== null && used + charge > limit) {
        throw budgetExceeded({ scope, month: change.month, limit, used, requested: charge });
      }
      const after = { reserved: ledger.reserved + change.reserved, spent: ledger.spent + change.spent };
      pending.set(key, after);
      result.push({ key, ledger: after });
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
