import { expect, inject, it } from 'vitest';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { DynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { printSoakReport, runSoak } from './soak.ts';

/** The small soak inside `npm test`: the same storm as `npm run soak`, fewer sandboxes. */
it('keeps every invariant through a small storm on DynamoDB Local and the embedded SQS server', {
  timeout: 240_000,
}, async () => {
  const client = localDynamoDbClient(inject('dynamodbEndpoint'));
  const tableName = `soak-${process.pid}`;
  await ensureTable(client, tableName);
  const report = await runSoak({
    sandboxes: 60,
    clients: 10,
    orgs: 3,
    seed: 7,
    store: new DynamoDbStore({ client: documentClient(client), tableName }),
    settleSeconds: 150,
  });
  printSoakReport(report);
  expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
  // The storm really happened: faults of every kind, killed workers, queueing for quota.
  for (const kind of [
    'insufficient_capacity',
    'sandbox_failed',
    'provider_unavailable',
    'dropped_create_response',
  ]) {
    expect(report.faults[kind] ?? 0, kind).toBeGreaterThan(0);
  }
  expect(report.workerKills).toBeGreaterThan(0);
  expect(report.quotaSamples).toBeGreaterThan(0);
});
