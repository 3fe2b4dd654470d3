import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors.ts';
import { documentClient } from '../../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../../lib/store/dynamodb/dynamodb-store.ts';
import { sandboxRecord } from '../../helpers/records.ts';

/**
 * Error paths DynamoDB Local cannot produce: it never raises TransactionConflict and never throttles.
 * Everything else about the store is proven against DynamoDB Local in test/integration/store/store.test.ts.
 */
const doc = documentClient(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
const mock = mockClient(doc);

function canceled(codes: string[]) {
  return new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
}

const audit = { actor: 'admin', action: 'test', target: 't', details: {} };

describe('DynamoDbStore under AWS errors', () => {
  afterEach(() => {
    mock.reset();
  });

  it('retries a change that lost to a concurrent transaction, then succeeds', async () => {
    mock
      .on(TransactWriteCommand)
      .rejectsOnce(canceled(['TransactionConflict', 'None', 'None']))
      .rejectsOnce(canceled(['None', 'TransactionConflict', 'None']))
      .resolves({});
    const store = dynamoDbStore({ client: doc, tableName: 't', linkInline: false });
    await store.createKey(keyRecord(), audit);
    expect(mock.commandCalls(TransactWriteCommand).length).toBe(3);
    expect(store.stats.conflictRetries).toBe(2);
  });

  it('answers 503 with retryable when conflicts persist', async () => {
    mock.on(TransactWriteCommand).rejects(canceled(['None', 'TransactionConflict', 'None']));
    const store = dynamoDbStore({ client: doc, tableName: 't', maxChainRetries: 3, linkInline: false });
    const error = await store.createKey(keyRecord(), audit).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'provider_unavailable', details: { retryable: true } });
    expect(mock.commandCalls(TransactWriteCommand).length).toBe(4);
  });

  it('surfaces throttling the SDK could not absorb as a retryable 503, never as a 500', async () => {
    const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
      name: 'ProvisionedThroughputExceededException',
      $metadata: {},
    });
    mock.on(GetCommand).rejects(throttled);
    const store = dynamoDbStore({ client: doc, tableName: 't' });
    const error = await store.getOrg('org_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'provider_unavailable', details: { retryable: true } });
  });

  it('does not retry a cancellation that is the caller’s (a stale sandbox version): it is a conflict', async () => {
    mock
      .on(GetCommand)
      .callsFake((input: { Key: { SK: string } }) =>
        input.Key.SK === 'AUDITHEAD'
          ? { Item: { seq: 1, hash: 'b'.repeat(64) } }
          : { Item: sandboxItemFor() },
      );
    mock.on(TransactWriteCommand).rejects(canceled(['ConditionalCheckFailed', 'None', 'None']));
    const store = dynamoDbStore({ client: doc, tableName: 't', linkInline: false });
    const record = sandboxItemFor();
    const error = await store
      .updateSandbox(record, { statusMessage: 'x' }, { audit })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'conflict' });
    expect(mock.commandCalls(TransactWriteCommand).length).toBe(1);
  });
});

function keyRecord() {
  return {
    id: 'key_1',
    orgId: 'org_1',
    name: 'k',
    role: 'member' as const,
    projectId: null,
    secretHash: 'a'.repeat(64),
    createdAt: '2026-01-01T00:00:00.000Z',
    revokedAt: null,
  };
}

function sandboxItemFor() {
  return sandboxRecord('org_1', {
    id: 'sbx_1',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  });
}
