import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { documentClient, localDynamoDbClient } from '../../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../../lib/store/dynamodb/dynamodb-store.ts';
import { auditItem, keyOf } from '../../../lib/store/dynamodb/items.ts';
import { ensureTable } from '../../../lib/store/dynamodb/table.ts';
import { type MemoryStore, memoryStore } from '../../../lib/store/memory.ts';
import type { Store } from '../../../lib/store/port.ts';
import { storeConformance } from './conformance.ts';
import { activityConformance, budgetConformance, webhookConformance } from './tenant-policy-conformance.ts';

let lastMemory: MemoryStore | undefined;

storeConformance('memory', {
  async create(options) {
    if (options?.shared !== true || lastMemory === undefined) lastMemory = memoryStore();
    return lastMemory;
  },
  tamper(store: Store) {
    const memory = store as MemoryStore;
    return {
      async rewrite(orgId, seq, change) {
        const events = memory.rawAudit(orgId);
        const index = events.findIndex((e) => e.seq === seq);
        const event = events[index];
        if (event !== undefined) events[index] = change(event);
      },
      async remove(orgId, seq) {
        const events = memory.rawAudit(orgId);
        events.splice(
          events.findIndex((e) => e.seq === seq),
          1,
        );
      },
    };
  },
});

budgetConformance('memory', { create: async () => memoryStore() });
webhookConformance('memory', { create: async () => memoryStore() });
activityConformance('memory', { create: async () => memoryStore() });

const base = localDynamoDbClient(inject('dynamodbEndpoint'));
const doc = documentClient(base);
let tableName = '';
let tables = 0;

storeConformance('dynamodb', {
  async create(options) {
    if (options?.shared !== true || tableName === '') {
      tableName = `conformance-${process.pid}-${++tables}`;
      await ensureTable(base, tableName);
    }
    return dynamoDbStore({ client: doc, tableName });
  },
  tamper(store: Store) {
    const table = tableName;
    return {
      async rewrite(orgId, seq, change) {
        const event = (await store.listAudit(orgId, { limit: 1000 })).items.find((e) => e.seq === seq);
        if (event === undefined) throw new Error(`no event ${seq}`);
        // Written under the original seq's key: what a direct edit of the table would do.
        const changed = change(event);
        await doc.send(
          new PutCommand({
            TableName: table,
            Item: { ...auditItem(changed), ...keyOf.auditEvent(orgId, seq) },
          }),
        );
      },
      async remove(orgId, seq) {
        await doc.send(new DeleteCommand({ TableName: table, Key: keyOf.auditEvent(orgId, seq) }));
      },
    };
  },
});

const freshTable = {
  async create() {
    const name = `budgets-${process.pid}-${++tables}`;
    await ensureTable(base, name);
    return dynamoDbStore({ client: doc, tableName: name });
  },
};
webhookConformance('dynamodb', freshTable);
activityConformance('dynamodb', freshTable);

budgetConformance('dynamodb', {
  async create() {
    const name = `budgets-${process.pid}-${++tables}`;
    await ensureTable(base, name);
    return dynamoDbStore({ client: doc, tableName: name });
  },
});
