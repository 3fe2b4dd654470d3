import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ApiError } from '../../errors.ts';
import type * as z from '../../zod.ts';
import { encodeCursor } from '../cursor.ts';
import type { Page } from '../page.ts';

/**
 * The table's shared mechanics, apart from what any item means: transactions with named actions (a
 * cancellation says which action failed), consistent gets, paged and whole-partition queries, and
 * throttling turned into a retryable 503.
 */

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** One action of a transaction, named so a cancellation reason can be traced to what failed. */
export interface Action {
  label: string;
  item: TransactItem;
}

export class Canceled extends Error {
  override readonly name = 'Canceled';
  readonly failed: { label: string; code: string }[];
  constructor(failed: { label: string; code: string }[], options?: ErrorOptions) {
    super(`transaction canceled: ${failed.map((f) => `${f.label}=${f.code}`).join(', ')}`, options);
    this.failed = failed;
  }
}

const throttlingErrors = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
]);

/** Counters the benchmark reads. */
export interface DynamoDbStoreStats {
  transactions: number;
  /** Changes redone because a concurrent transaction touched the same item (TransactionConflict). */
  conflictRetries: number;
  /** Transactions that linked outbox items into a chain, and link attempts another linker beat. */
  linkTransactions: number;
  linkRetries: number;
}

/**
 * A `.catch` handler for a write whose cancellation means something to the caller: a canceled
 * transaction becomes the error `translate` picks from the labels of the actions that failed; any other
 * error passes unchanged.
 */
export function onCanceled(translate: (failed: ReadonlySet<string>) => Error): (error: unknown) => never {
  return (error) => {
    if (error instanceof Canceled) throw translate(new Set(error.failed.map((f) => f.label)));
    throw error;
  };
}

/** A single (non-transaction) write refused by its condition. */
export function isConditionFailed(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}

/** A random pause before another attempt: up to `baseMs` x 2^attempt, never more than `capMs`. */
export function jitteredPause(attempt: number, baseMs: number, capMs: number): Promise<void> {
  return new Promise((resolve) =>
    setTimeout(resolve, Math.random() * Math.min(baseMs * 2 ** attempt, capMs)),
  );
}

/** A key condition on a partition, after a sort key when a cursor gives one (key values cannot be empty). */
export function afterSortKey(
  partitionName: string,
  partition: string,
  sortName: string,
  after: string | undefined,
) {
  return after === undefined
    ? { KeyConditionExpression: `${partitionName} = :pk`, ExpressionAttributeValues: { ':pk': partition } }
    : {
        KeyConditionExpression: `${partitionName} = :pk AND ${sortName} > :after`,
        ExpressionAttributeValues: { ':pk': partition, ':after': after },
      };
}

/** Names and values a condition refers to. */
interface ConditionExpression {
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

function conditionOf(condition: string, expression: ConditionExpression) {
  return {
    ConditionExpression: condition,
    ...(expression.names && { ExpressionAttributeNames: expression.names }),
    ...(expression.values && { ExpressionAttributeValues: expression.values }),
  };
}

export function put(
  label: string,
  item: Record<string, unknown>,
  condition: string,
  expression: ConditionExpression = {},
): Action {
  return { label, item: { Put: { TableName: '', Item: item, ...conditionOf(condition, expression) } } };
}

export function del(
  label: string,
  key: Record<string, string>,
  condition: string,
  expression: ConditionExpression = {},
): Action {
  return { label, item: { Delete: { TableName: '', Key: key, ...conditionOf(condition, expression) } } };
}

export function check(label: string, key: Record<string, string>, condition: string): Action {
  return { label, item: { ConditionCheck: { TableName: '', Key: key, ConditionExpression: condition } } };
}

function withTable(item: TransactItem, table: string): TransactItem {
  if (item.Put) return { Put: { ...item.Put, TableName: table } };
  if (item.Update) return { Update: { ...item.Update, TableName: table } };
  if (item.ConditionCheck) return { ConditionCheck: { ...item.ConditionCheck, TableName: table } };
  if (item.Delete) return { Delete: { ...item.Delete, TableName: table } };
  return item;
}

/** One table, as the store and its audit outbox use it. */
export class TableClient {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #stats: DynamoDbStoreStats;

  constructor(doc: DynamoDBDocumentClient, table: string, stats: DynamoDbStoreStats) {
    this.#doc = doc;
    this.#table = table;
    this.#stats = stats;
  }

  get tableName(): string {
    return this.#table;
  }

  async transact(actions: Action[]): Promise<void> {
    this.#stats.transactions++;
    try {
      await this.call((doc) =>
        doc.send(
          new TransactWriteCommand({ TransactItems: actions.map((a) => withTable(a.item, this.#table)) }),
        ),
      );
    } catch (error) {
      if (error instanceof TransactionCanceledException) {
        const reasons = error.CancellationReasons ?? [];
        const failed = actions
          .map((action, index) => ({ label: action.label, code: reasons[index]?.Code ?? 'Unknown' }))
          .filter((f) => f.code !== 'None');
        throw new Canceled(failed, { cause: error });
      }
      throw error;
    }
  }
  async get(key: Record<string, string>): Promise<Record<string, unknown> | undefined> {
    const result = await this.call((doc) =>
      doc.send(new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true })),
    );
    return result.Item;
  }
  /**
   * Several items read consistently in one round trip (BatchGetItem), in the order of `keys`; undefined
   * where there is none. Keys DynamoDB leaves unprocessed (throttling) are asked for again.
   */
  async getMany(keys: Record<string, string>[]): Promise<(Record<string, unknown> | undefined)[]> {
    const found = new Map<string, Record<string, unknown>>();
    const id = (item: Record<string, unknown>) => `${String(item.PK)}\u0000${String(item.SK)}`;
    let pending: Record<string, unknown>[] = keys;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await jitteredPause(attempt, 20, 500);
      const ask = pending;
      const result = await this.call((doc) =>
        doc.send(
          new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: ask, ConsistentRead: true } } }),
        ),
      );
      for (const item of result.Responses?.[this.#table] ?? []) found.set(id(item), item);
      pending = result.UnprocessedKeys?.[this.#table]?.Keys ?? [];
      if (attempt >= 8 && pending.length > 0) {
        throw new ApiError('provider_unavailable', 'the state store is throttling requests; retry shortly', {
          retryable: true,
        });
      }
    }
    return keys.map((key) => found.get(id(key)));
  }

  /** An item read consistently and parsed with its record's schema; undefined when there is none. */
  async getParsed<S extends z.ZodMiniType>(
    key: Record<string, string>,
    schema: S,
  ): Promise<z.output<S> | undefined> {
    const item = await this.get(key);
    return item === undefined ? undefined : schema.parse(item);
  }

  /**
   * Queries until `limit + 1` matching items are found (filters can thin pages) or the partition ends, so
   * `nextCursor` is null exactly when nothing follows.
   */
  async queryPage<T>(
    input: Omit<QueryCommandInput, 'TableName'>,
    limit: number,
    parse: (item: Record<string, unknown>) => T,
    cursorOf: (item: T) => string,
  ): Promise<Page<T>> {
    const items: T[] = [];
    let startKey = input.ExclusiveStartKey;
    do {
      const result = await this.call((doc) =>
        doc.send(
          new QueryCommand({
            ...input,
            TableName: this.#table,
            // A filter thins pages after they are read: evaluate more per request so a rare match in a
            // large partition costs a few requests, not one per 25 items.
            Limit: input.FilterExpression === undefined ? Math.max(limit + 1, 25) : Math.max(limit + 1, 250),
            ...(startKey !== undefined && { ExclusiveStartKey: startKey }),
          }),
        ),
      );
      for (const item of result.Items ?? []) items.push(parse(item));
      startKey = result.LastEvaluatedKey;
    } while (startKey !== undefined && items.length <= limit);
    const slice = items.slice(0, limit);
    const last = slice.at(-1);
    return {
      items: slice,
      nextCursor: items.length > limit && last !== undefined ? encodeCursor(cursorOf(last)) : null,
    };
  }
  /** Every item of a small partition whose sort key starts with `prefix` (all of it for ''): pools and their views. */
  async queryAll<T>(
    partition: string,
    prefix: string,
    parse: (item: Record<string, unknown>) => T,
  ): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.call((doc) =>
        doc.send(
          new QueryCommand({
            TableName: this.#table,
            ...(prefix === ''
              ? { KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: { ':pk': partition } }
              : {
                  KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
                  ExpressionAttributeValues: { ':pk': partition, ':prefix': prefix },
                }),
            ConsistentRead: true,
            ...(startKey !== undefined && { ExclusiveStartKey: startKey }),
          }),
        ),
      );
      for (const item of result.Items ?? []) items.push(parse(item));
      startKey = result.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }
  /** Runs one SDK call; throttling the SDK's own retries could not absorb becomes a retryable 503. */
  async call<T>(request: (doc: DynamoDBDocumentClient) => Promise<T>): Promise<T> {
    try {
      return await request(this.#doc);
    } catch (error) {
      if (error instanceof Error && throttlingErrors.has(error.name)) {
        throw new ApiError(
          'provider_unavailable',
          'the state store is throttling requests; retry shortly',
          { retryable: true },
          { cause: error },
        );
      }
      throw error;
    }
  }
}
