import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FakeAdapter } from '../adapters/fake/fake-adapter.ts';
import { buildPools } from '../adapters/registry.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { parseConfig } from '../lib/config.ts';
import { createControlPlane } from '../lib/control-plane.ts';
import { silentLog } from '../lib/log.ts';
import { documentClient, localDynamoDbClient } from '../lib/store/dynamodb/client.ts';
import { DynamoDbStore } from '../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../lib/store/dynamodb/table.ts';

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
    (next, context) => async (args) => {
      requests++;
      if (process.env.BENCH_TRACE)
        console.log('  ddb', context.commandName, JSON.stringify(args.input).slice(0, 300));
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

/**
 * A control plane on a new table of `db`, with one fake pool `fake` and a queue that drops messages:
 * the benchmarks drive the workers themselves. Audit links are not made inline, so request counts show
 * the API's and workers' own requests, and linking is counted on its own.
 */
export async function benchPlane(db: CountingDynamoDb, tableName: string) {
  await ensureTable(db.base, tableName);
  const store = new DynamoDbStore({ client: db.doc, tableName, linkInline: false });
  const fake = new FakeAdapter();
  const config = parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] });
  const plane = createControlPlane({
    config,
    store,
    queue: { send: async () => {}, changeVisibility: async () => {} },
    pools: await buildPools(config, { log: silentLog, adapters: { fake } }),
    log: silentLog,
    adminKey: 'bench-admin',
  });
  return { store, fake, plane };
}
