import { inject } from 'vitest';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { type DynamoDbStoreOptions, dynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { memoryStore } from '../../lib/store/memory.ts';
import type { Store } from '../../lib/store/port.ts';

let tables = 0;

/** A fresh store of each kind: memory, or a new table in the run's DynamoDB Local. */
export const storeFactories: Record<
  'memory' | 'dynamodb',
  (options?: Partial<DynamoDbStoreOptions>) => Promise<Store>
> = {
  memory: async () => memoryStore(),
  dynamodb: async (options = {}) => {
    const base = localDynamoDbClient(inject('dynamodbEndpoint'));
    const tableName = `test-${process.pid}-${++tables}`;
    await ensureTable(base, tableName);
    return dynamoDbStore({ client: documentClient(base), tableName, ...options });
  },
};
