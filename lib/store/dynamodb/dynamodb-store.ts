import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AuditEvent } from '../../audit/chain.ts';
import { dynamoDbAudit } from '../audit/dynamodb.ts';
import { dynamoDbLeases } from '../leases/dynamodb.ts';
import { dynamoDbPools } from '../pools/dynamodb.ts';
import type { Store } from '../port.ts';
import { dynamoDbSandboxes } from '../sandboxes/dynamodb.ts';
import { dynamoDbSnapshots } from '../snapshots/dynamodb.ts';
import { dynamoDbTenancy } from '../tenancy/dynamodb.ts';
import { dynamoDbWarm } from '../warm/dynamodb.ts';
import { dynamoDbWebhooks } from '../webhooks/dynamodb.ts';
import { AuditOutbox } from './audit-outbox.ts';
import type { DynamoDbContext } from './context.ts';
import { type DynamoDbStoreStats, TableClient } from './table-client.ts';

export type { DynamoDbStoreStats } from './table-client.ts';

export interface DynamoDbStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  now?: () => Date;
  /** How often a write or a link is retried when a concurrent transaction got there first. */
  maxChainRetries?: number;
  /**
   * Link audit outbox items into the chain right after each write (default). Off, linking happens when
   * the chain is read or when linkAudit is called (the sweep).
   */
  linkInline?: boolean;
  /**
   * Called with each batch of events about to be linked, before the link is written: a failure leaves
   * them in the outbox, so what it publishes is published at least once (the lifecycle event bus).
   */
  onLinking?: (events: AuditEvent[]) => Promise<void>;
}

/**
 * The store on one DynamoDB table (docs/store.md): each aggregate's part (lib/store/<aggregate>/dynamodb.ts)
 * over one table client and one audit outbox. Every change is one TransactWriteItems with its
 * conditions: the sandbox's status and version, the usage bounds computed in code (conditions cannot
 * add), the pool's slot bound, and the org's audit chain head.
 */
export interface DynamoDbStore extends Store {
  /** Transactions, retries and links made through this handle (the bench's and tests' counts). */
  readonly stats: DynamoDbStoreStats;
  /** Audit records of an org not yet linked into its chain (for operators and tests). */
  outboxSize(orgId: string): Promise<number>;
  /** Resolves once the links this handle started (inline after writes) have ended. */
  linkingIdle(): Promise<void>;
  /** `pending`: a record was just written (what a change's inline link says), so no first look is taken. */
  linkAudit(orgId: string, options?: { pending?: boolean }): Promise<void>;
}

export function dynamoDbStore(options: DynamoDbStoreOptions): DynamoDbStore {
  const stats: DynamoDbStoreStats = {
    transactions: 0,
    conflictRetries: 0,
    linkTransactions: 0,
    linkRetries: 0,
  };
  const now = options.now ?? (() => new Date());
  const t = new TableClient(options.client, options.tableName, stats);
  const audit = new AuditOutbox(t, stats, {
    now,
    maxChainRetries: options.maxChainRetries ?? 25,
    linkInline: options.linkInline ?? true,
    onLinking: options.onLinking,
  });
  const c: DynamoDbContext = { t, audit, now, table: options.tableName };
  return {
    ...dynamoDbTenancy(c),
    ...dynamoDbWebhooks(c),
    ...dynamoDbPools(c),
    ...dynamoDbSandboxes(c),
    ...dynamoDbSnapshots(c),
    ...dynamoDbAudit(c),
    ...dynamoDbLeases(c),
    ...dynamoDbWarm(c),
    stats,
    outboxSize: (orgId) => audit.outboxSize(orgId),
    linkingIdle: () => audit.idle(),
  };
}
