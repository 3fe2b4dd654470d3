import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';

/**
 * The single table's shape, shared by the CDK app and by tests that create the table in DynamoDB Local.
 * docs/store.md lists every item kind, its keys and the access pattern each index serves.
 */
export const tableKeys = {
  partition: 'PK',
  sort: 'SK',
  /** Listings by parent: orgs (ORGS), an org's keys (ORG#<id>#KEYS), its queued sandboxes (ORG#<id>#QUEUED). */
  byParent: { name: 'GSI1', partition: 'GSI1PK', sort: 'GSI1SK' },
  /** Live sandboxes by status across orgs, oldest update first (sparse: terminal sandboxes leave it). */
  byStatus: { name: 'GSI2', partition: 'GSI2PK', sort: 'GSI2SK' },
  /** Live sandboxes by pool (sparse): the reconciler's view of one pool. */
  byPool: { name: 'GSI3', partition: 'GSI3PK', sort: 'GSI3SK' },
  /** Epoch seconds; DynamoDB TTL garbage-collects expired idempotency records (never relied on for correctness). */
  ttl: 'ttl',
} as const;

export function createTableInput(tableName: string): CreateTableCommandInput {
  const index = (spec: { name: string; partition: string; sort: string }) => ({
    IndexName: spec.name,
    KeySchema: [
      { AttributeName: spec.partition, KeyType: 'HASH' as const },
      { AttributeName: spec.sort, KeyType: 'RANGE' as const },
    ],
    Projection: { ProjectionType: 'ALL' as const },
  });
  const attributes = [
    tableKeys.partition,
    tableKeys.sort,
    tableKeys.byParent.partition,
    tableKeys.byParent.sort,
    tableKeys.byStatus.partition,
    tableKeys.byStatus.sort,
    tableKeys.byPool.partition,
    tableKeys.byPool.sort,
  ];
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: attributes.map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: [
      { AttributeName: tableKeys.partition, KeyType: 'HASH' },
      { AttributeName: tableKeys.sort, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [index(tableKeys.byParent), index(tableKeys.byStatus), index(tableKeys.byPool)],
  };
}

/** Creates the table when it is missing (DynamoDB Local, tests) and waits until it is active. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
}
