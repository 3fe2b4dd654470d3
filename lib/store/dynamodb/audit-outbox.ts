import { QueryCommand, type QueryCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type AuditEvent,
  type AuditInput,
  type ChainHead,
  chainEvent,
  genesisHead,
} from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { newUlid } from '../../ids.ts';
import * as z from '../../zod.ts';
import { decodeCursor } from '../cursor.ts';
import type { Page, PageRequest } from '../page.ts';
import { auditEventSchema } from '../records.ts';
import { auditItem, keyOf } from './items.ts';
import {
  type Action,
  Canceled,
  type DynamoDbStoreStats,
  del,
  isConditionFailed,
  jitteredPause,
  put,
  type TableClient,
} from './table-client.ts';

/** Outbox items linked per transaction: 2 actions each plus the head stay within the 100-action limit. */
const outboxBatch = 25;
/** How long a linker may hold an org's linking lease; a crashed linker's lease lapses after it. */
const linkLeaseMs = 10_000;

const outboxItemSchema = z.object({
  SK: z.string(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  target: z.string(),
  details: z.record(z.string(), z.unknown()),
});

/** The chain head moves from `from` to `to` only if nobody moved it since it was read. */
function headPut(orgId: string, from: ChainHead, to: ChainHead): Action {
  const item = { ...keyOf.chainHead(orgId), seq: to.seq, hash: to.hash };
  // Never while a linker holds the lease: its published numbering must stay the committed one.
  const unleased = '(attribute_not_exists(linkLeaseUntil) OR linkLeaseUntil < :now)';
  const now = { ':now': Date.now() };
  return from.seq === 0
    ? put('audit-head', item, `attribute_not_exists(seq) AND ${unleased}`, { values: now })
    : put('audit-head', item, `seq = :seq AND ${unleased}`, { values: { ':seq': from.seq, ...now } });
}

export interface AuditOutboxOptions {
  now: () => Date;
  maxChainRetries: number;
  linkInline: boolean;
  onLinking: ((events: AuditEvent[]) => Promise<void>) | undefined;
}

/**
 * Every change's audit record, and the org chains they are linked into: a change writes its record to
 * the org's outbox in its own transaction (`write`), and one linker at a time (a lease on the chain head)
 * numbers pending records, publishes their events and links them (docs/store.md).
 */
export class AuditOutbox {
  readonly #t: TableClient;
  readonly #table: string;
  readonly #stats: DynamoDbStoreStats;
  readonly #now: () => Date;
  readonly #maxChainRetries: number;
  readonly #linkInline: boolean;
  readonly #onLinking: ((events: AuditEvent[]) => Promise<void>) | undefined;
  readonly #linking = new Map<string, Promise<void>>();
  /** This handle's name as a linker (one per container). */
  readonly #linkerId = newUlid();
  readonly #linkAgain = new Set<string>();

  constructor(table: TableClient, stats: DynamoDbStoreStats, options: AuditOutboxOptions) {
    this.#t = table;
    this.#table = table.tableName;
    this.#stats = stats;
    this.#now = options.now;
    this.#maxChainRetries = options.maxChainRetries;
    this.#linkInline = options.linkInline;
    this.#onLinking = options.onLinking;
  }

  /** Appends one event now, on the current head; a linker or another append that moved the head first is retried. */
  async appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
    for (let attempt = 0; ; attempt++) {
      const head = await this.#readHead(orgId);
      const event = chainEvent(orgId, head, audit, this.#now().toISOString());
      try {
        await this.#t.transact([
          put('audit-event', auditItem(event), 'attribute_not_exists(PK)'),
          headPut(orgId, head, event),
        ]);
        return event;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        this.#stats.linkRetries++;
        if (attempt >= this.#maxChainRetries) {
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        }
        await jitteredPause(attempt, 5, 100);
      }
    }
  }
  async auditHead(orgId: string): Promise<ChainHead> {
    await this.linkAudit(orgId);
    return this.#readHead(orgId);
  }
  async listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
    await this.linkAudit(orgId);
    const after = Number(decodeCursor(page.cursor) ?? '0');
    return this.#t.queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND SK > :after',
        ExpressionAttributeValues: {
          ':pk': keyOf.auditEvent(orgId, 0).PK,
          ':after': keyOf.auditEvent(orgId, after).SK,
        },
      },
      page.limit,
      (item) => auditEventSchema.parse(item),
      (event) => String(event.seq),
    );
  }
  /** Audit records of an org not yet linked into its chain (for operators and tests). */
  async outboxSize(orgId: string): Promise<number> {
    return (await this.#queryOutbox(orgId, { Select: 'COUNT' })).Count ?? 0;
  }
  /** The org's pending audit records, oldest first (consistent: a record just written is seen). */
  #queryOutbox(orgId: string, extra: Pick<QueryCommandInput, 'Limit' | 'Select'>) {
    return this.#t.call((doc) =>
      doc.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': keyOf.outbox(orgId, '').PK },
          ConsistentRead: true,
          ...extra,
        }),
      ),
    );
  }
  async #readHead(orgId: string): Promise<ChainHead> {
    return headOf(orgId, await this.#t.get(keyOf.chainHead(orgId)));
  }
  /**
   * Takes the org's linking lease on its chain head item (free, expired, or already this linker's).
   * Only the holder reads the head, numbers the pending records and publishes their events, so two
   * linkers never publish one record under two sequence numbers: a repeat publication after a crash
   * numbers the records from the same committed head, the same way.
   */
  async #claimLinking(orgId: string): Promise<ChainHead | undefined> {
    const now = this.#now().getTime();
    try {
      // The head comes back with the lease (ALL_NEW): the numbering below needs no read of its own.
      const result = await this.#t.call((doc) =>
        doc.send(
          new UpdateCommand({
            TableName: this.#table,
            Key: keyOf.chainHead(orgId),
            UpdateExpression: 'SET linkLease = :owner, linkLeaseUntil = :until',
            ConditionExpression:
              'attribute_not_exists(linkLeaseUntil) OR linkLeaseUntil < :now OR linkLease = :owner',
            ExpressionAttributeValues: { ':owner': this.#linkerId, ':until': now + linkLeaseMs, ':now': now },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return headOf(orgId, result.Attributes);
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }
  async #releaseLinking(orgId: string): Promise<void> {
    await this.#t
      .call((doc) =>
        doc.send(
          new UpdateCommand({
            TableName: this.#table,
            Key: keyOf.chainHead(orgId),
            UpdateExpression: 'REMOVE linkLease, linkLeaseUntil',
            ConditionExpression: 'linkLease = :owner',
            ExpressionAttributeValues: { ':owner': this.#linkerId },
          }),
        ),
      )
      .catch((error: unknown) => {
        if (!isConditionFailed(error)) throw error;
      });
  }
  /**
   * Links the org's pending outbox items into its audit chain, oldest first, and resolves when none is
   * left. Within this process one drain runs per org at a time (a call during a drain makes it look
   * again); across processes the head condition keeps every chain single: a linker that loses re-reads
   * and continues where the winner stopped.
   */
  linkAudit(orgId: string, options: { pending?: boolean } = {}): Promise<void> {
    const running = this.#linking.get(orgId);
    if (running !== undefined) {
      this.#linkAgain.add(orgId);
      return running;
    }
    const drain = (async () => {
      try {
        // Only the first pass may skip the look: a call during a drain may have come from a read.
        let pending = options.pending === true;
        do {
          this.#linkAgain.delete(orgId);
          await this.#linkOutbox(orgId, pending);
          pending = false;
        } while (this.#linkAgain.has(orgId));
      } finally {
        this.#linking.delete(orgId);
      }
    })();
    this.#linking.set(orgId, drain);
    return drain;
  }
  /** Resolves once no drain started by this handle is running (benchmarks; an orderly stop). */
  async idle(): Promise<void> {
    while (this.#linking.size > 0) await Promise.allSettled([...this.#linking.values()]);
  }

  /**
   * One drain. `knownPending`: the caller just wrote a record to the outbox (an inline link after a
   * change), so no first look is needed. A batch smaller than the limit ends the drain without another
   * look: a record written meanwhile is linked by its own writer's link (or the next read or sweep).
   */
  async #linkOutbox(orgId: string, knownPending: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      // Nothing pending (the common case for reads): no lease is taken at all.
      if (!knownPending || attempt > 0) {
        const peek = await this.#queryOutbox(orgId, { Limit: 1 });
        if ((peek.Items ?? []).length === 0) return;
      }
      // Under the lease: the head it returns is the one the numbering below commits on.
      const claimed = await this.#claimLinking(orgId);
      if (claimed === undefined) {
        // Another linker holds the lease and links these records too: wait for it, then look again.
        this.#stats.linkRetries++;
        if (attempt >= this.#maxChainRetries)
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        await jitteredPause(attempt, 10, 200);
        continue;
      }
      let head = claimed;
      const pending = await this.#queryOutbox(orgId, { Limit: outboxBatch });
      const items = (pending.Items ?? []).map((item) => outboxItemSchema.parse(item));
      if (items.length === 0) {
        await this.#releaseLinking(orgId);
        return;
      }
      const previous = head;
      const events = items.map((item) => {
        const { actor, action, target, details } = item;
        const event = chainEvent(orgId, head, { actor, action, target, details }, item.at);
        head = event;
        return { outboxId: item.SK, event };
      });
      // Published before the link commits: if this fails, nothing is linked and the next link publishes again.
      try {
        await this.#onLinking?.(events.map(({ event }) => event));
      } catch (error) {
        await this.#releaseLinking(orgId);
        throw error;
      }
      const owner = { ':owner': this.#linkerId };
      const actions: Action[] = [
        ...events.map(({ event }) => put('audit-event', auditItem(event), 'attribute_not_exists(PK)')),
        ...events.map(({ outboxId }) => del('outbox', keyOf.outbox(orgId, outboxId), 'attribute_exists(PK)')),
        // The new head replaces the item, lease included: committing releases it.
        previous.seq === 0
          ? put(
              'audit-head',
              { ...keyOf.chainHead(orgId), seq: head.seq, hash: head.hash },
              'attribute_not_exists(seq) AND linkLease = :owner',
              { values: owner },
            )
          : put(
              'audit-head',
              { ...keyOf.chainHead(orgId), seq: head.seq, hash: head.hash },
              'seq = :seq AND linkLease = :owner',
              { values: { ':seq': previous.seq, ...owner } },
            ),
      ];
      try {
        await this.#t.transact(actions);
        this.#stats.linkTransactions++;
        if (items.length < outboxBatch) return;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        // The lease expired and another linker linked first: read again and continue after it.
        this.#stats.linkRetries++;
        if (attempt >= this.#maxChainRetries)
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        await jitteredPause(attempt, 5, 100);
      }
    }
  }
  /**
   * Runs a change as one transaction. Its audit record goes in as an outbox item of the org, with no
   * condition on the chain head, so changes of one org never contend on it; the ordered linker puts it
   * into the chain right after. A transaction that lost to a concurrent one is retried a few times;
   * every other cancellation is the caller's to interpret.
   */
  async write(orgId: string, audit: AuditInput | undefined, build: () => Action[]): Promise<void> {
    const outboxId = newUlid();
    for (let attempt = 0; ; attempt++) {
      const actions = build();
      if (audit !== undefined) {
        actions.push(
          put(
            'outbox',
            { ...keyOf.outbox(orgId, outboxId), orgId, at: this.#now().toISOString(), ...audit },
            'attribute_not_exists(PK)',
          ),
        );
      }
      try {
        await this.#t.transact(actions);
        if (audit !== undefined && this.#linkInline) {
          this.linkAudit(orgId, { pending: true }).catch(() => {
            // The items stay in the outbox; the next link of this org (any write, read or the sweep) takes them.
          });
        }
        return;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        const retryable = error.failed.every(
          (f) => f.code === 'TransactionConflict' || f.code === 'ThrottlingError',
        );
        if (!retryable) throw error;
        if (attempt >= this.#maxChainRetries) {
          throw errors.providerUnavailable(
            `the state store is busy with other changes of org ${orgId}; retry`,
            {
              retryable: true,
            },
          );
        }
        this.#stats.conflictRetries++;
        await jitteredPause(attempt, 5, 200);
      }
    }
  }
}

/** The chain head in its item; an item holding only a linker's lease (or none) is a chain not started yet. */
function headOf(orgId: string, item: Record<string, unknown> | undefined): ChainHead {
  if (item === undefined || (item.seq === undefined && item.hash === undefined)) return genesisHead;
  const { seq, hash } = item;
  if (typeof seq !== 'number' || typeof hash !== 'string')
    throw new Error(`the chain head of ${orgId} is corrupt`);
  return { seq, hash };
}
