import { expect, inject, it } from 'vitest';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
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
    store: dynamoDbStore({ client: documentClient(client), tableName }),
    settleSeconds: 150,
  });
  printSoakReport(report);
  expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
  // The storm really happened: injected faults, killed and restarted workers, queueing for quota. (Which
  // fault kinds a 60-sandbox run hits varies with the interleaving; the full run reports each.)
  const createFaults = [
    'insufficient_capacity',
    'sandbox_failed',
    'provider_unavailable',
    'dropped_create_response',
  ];
  expect(createFaults.reduce((sum, kind) => sum + (report.faults[kind] ?? 0), 0)).toBeGreaterThanOrEqual(3);
  expect(report.workerKills).toBeGreaterThan(0);
  expect(report.workerRestarts).toBeGreaterThan(0);
  expect(report.quotaSamples).toBeGreaterThan(0);
});
