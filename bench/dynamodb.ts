import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FakeAdapter } from '../adapters/fake/fake-adapter.ts';
import { buildPools } from '../adapters/registry.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { parseConfig } from '../lib/config.ts';
import { createControlPlane } from '../lib/control-plane.ts';
import { publishLifecycleEvents } from '../lib/events/port.ts';
import { silentLog } from '../lib/log.ts';
import { documentClient, localDynamoDbClient } from '../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../lib/store/dynamodb/table.ts';
import { WebhookFanout } from '../lib/webhooks/fanout.ts';

export interface RequestCounts {
  /** Every request sent. */
  requests: number;
  /**
   * Of them, the audit chain's linking (claim of the head, outbox query, link transaction) and what its
   * hook reads (the webhook fan-out's query of the org's endpoints).
   */
  linking: number;
  /**
   * Sequential round trips of the request path: requests (linking aside) started while no other was in
   * flight; requests sent in parallel share one.
   */
  roundTrips: number;
}

export interface CountingDynamoDb {
  base: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  /** DynamoDB requests sent so far, counted by an SDK middleware. */
  requests(): number;
  counts(): RequestCounts;
  /** Calls `listener` with each request's command name and input (as the document client took it). */
  listen(listener: RequestListener): () => void;
  stop(): Promise<void>;
}

/** A request as sent and, once answered, its output (undefined for a request that failed). */
export type RequestListener = (command: string, input: unknown, output?: unknown) => void;

/** Linking's requests: they touch the chain head (claim, link) or query an outbox; a change's own do not. */
export function isLinking(command: string, input: string): boolean {
  if (command === 'QueryCommand') return input.includes('#OUTBOX') || input.includes('"WHK#"');
  return input.includes('"AUDITHEAD"');
}

/** DynamoDB Local with a client that counts every request it sends: the benchmarks' store. */
export async function countingDynamoDb(): Promise<CountingDynamoDb> {
  const local = await startDynamoDbLocal();
  const base = localDynamoDbClient(local.endpoint);
  const counts: RequestCounts = { requests: 0, linking: 0, roundTrips: 0 };
  const listeners = new Set<RequestListener>();
  let inFlight = 0;
  base.middlewareStack.add(
    (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      const linking = isLinking(context.commandName ?? '', input);
      counts.requests++;
      if (linking) counts.linking++;
      // BENCH_TRACE=1 prints each request: what the counts are made of.
      if (process.env.BENCH_TRACE) console.log('  ddb', context.commandName, input.slice(0, 300));
      const command = context.commandName ?? '';
      for (const listener of listeners) listener(command, args.input);
      const answered = async () => {
        const result = await next(args);
        for (const listener of listeners) listener(command, args.input, result.output);
        return result;
      };
      // Linking runs beside the request path (after the change it links): only the path's trips count.
      if (linking) return answered();
      if (inFlight === 0) counts.roundTrips++;
      inFlight++;
      try {
        return await answered();
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: 'countRequests' },
  );
  return {
    base,
    doc: documentClient(base),
    requests: () => counts.requests,
    counts: () => ({ ...counts }),
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      base.destroy();
      await local.stop();
    },
  };
}

/**
 * A control plane on a new table of `db`, with one fake pool `fake` and a queue that drops messages:
 * the benchmarks drive the workers themselves. Audit links are made inline (as deployed) only when asked.
 */
export async function benchPlane(
  db: CountingDynamoDb,
  tableName: string,
  options: { linkInline?: boolean } = {},
) {
  await ensureTable(db.base, tableName);
  // Linking fans lifecycle events out to webhooks as deployed (functions/wiring.ts): the org's
  // endpoints are read for every batch, so their cost is in the figures.
  const fanout = new WebhookFanout();
  const store = dynamoDbStore({
    client: db.doc,
    tableName,
    linkInline: options.linkInline ?? false,
    onLinking: publishLifecycleEvents(fanout),
  });
  const fake = new FakeAdapter();
  const config = parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] });
  // Wired as a Lambda container is (functions/wiring.ts): the registry reads runtime pools from the store.
  const plane = createControlPlane({
    config,
    store,
    queue: { send: async () => {}, changeVisibility: async () => {} },
    pools: await buildPools(config, { log: silentLog, adapters: { fake }, store }),
    log: silentLog,
    adminKey: 'bench-admin',
  });
  fanout.attach({ store, queue: { send: async () => {}, changeVisibility: async () => {} } });
  return { store, fake, plane };
}
