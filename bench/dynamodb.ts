import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { documentClient, localDynamoDbClient } from '../lib/store/dynamodb/client.ts';

export interface CountingDynamoDb {
  base: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  /** DynamoDB requests sent so far, counted by an SDK middleware. */
  requests(): number;
  stop(): Promise<void>;
}

/** DynamoDB Local with a client that counts every request it sends: the benchmarks' store. */
export async function countingDynamoDb(): Promise<CountingDynamoDb> {
  const local = await startDynamoDbLocal();
  const base = localDynamoDbClient(local.endpoint);
  let requests = 0;
  base.middlewareStack.add(
    (next) => async (args) => {
      requests++;
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  return {
    base,
    doc: documentClient(base),
    requests: () => requests,
    async stop() {
      base.destroy();
      await local.stop();
    },
  };
}
