import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { keyOf } from '../dynamodb/items.ts';
import { isConditionFailed } from '../dynamodb/table-client.ts';
import type { LeaseStore } from './port.ts';

/** The leases aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbLeases(c: DynamoDbContext): LeaseStore {
  const part: LeaseStore = {
    async acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean> {
      try {
        await c.t.call((doc) =>
          doc.send(
            new PutCommand({
              TableName: c.table,
              Item: { ...keyOf.lease(name), owner, until },
              ConditionExpression: 'attribute_not_exists(PK) OR #until < :now OR #owner = :owner',
              ExpressionAttributeNames: { '#until': 'until', '#owner': 'owner' },
              ExpressionAttributeValues: { ':now': now, ':owner': owner },
            }),
          ),
        );
        return true;
      } catch (error) {
        if (isConditionFailed(error)) return false;
        throw error;
      }
    },

    async releaseLease(name: string, owner: string): Promise<void> {
      try {
        await c.t.call((doc) =>
          doc.send(
            new DeleteCommand({
              TableName: c.table,
              Key: keyOf.lease(name),
              ConditionExpression: '#owner = :owner',
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: { ':owner': owner },
            }),
          ),
        );
      } catch (error) {
        // Taken over after it expired: it is no longer ours to release.
        if (!isConditionFailed(error)) throw error;
      }
    },
  };
  return part;
}
