/**
 * npm run soak: the full storm (1,000 sandboxes, 20 clients, 5 orgs) on DynamoDB Local and the embedded
 * SQS server, printing the invariants with counts, throughput and create->running percentiles.
 * Options: --sandboxes N --clients N --orgs N --seed N. Exits non-zero when an invariant fails.
 */
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.ts';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { printSoakReport, runSoak } from './soak.ts';

const { values } = parseArgs({
  options: {
    sandboxes: { type: 'string', default: '1000' },
    clients: { type: 'string', default: '20' },
    orgs: { type: 'string', default: '5' },
    seed: { type: 'string', default: '1' },
  },
});
const local = await startDynamoDbLocal();
const client = localDynamoDbClient(local.endpoint);
try {
  await ensureTable(client, 'soak');
  const report = await runSoak({
    sandboxes: Number(values.sandboxes),
    clients: Number(values.clients),
    orgs: Number(values.orgs),
    seed: Number(values.seed),
    store: dynamoDbStore({ client: documentClient(client), tableName: 'soak' }),
    settleSeconds: 600,
  });
  printSoakReport(report);
  process.exitCode = report.invariants.every((i) => i.ok) ? 0 : 1;
} finally {
  client.destroy();
  await local.stop();
}
