import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { buildPools } from '../../adapters/registry.ts';
import { createStreamingApiHandler } from '../../functions/api.ts';
import { createPoolRefreshHandler } from '../../functions/pool-refresh.ts';
import { createProvisionHandler } from '../../functions/provision.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import { createSweepHandler } from '../../functions/sweep.ts';
import { createTerminateHandler } from '../../functions/terminate.ts';
import type { ExecutionAdapter } from '../../lib/adapter/contract.ts';
import type { AuditEvent } from '../../lib/audit.ts';
import { type Config, parseConfig } from '../../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../../lib/control-plane.ts';
import { type EventPublisher, type LifecycleEvent, publishLifecycleEvents } from '../../lib/events.ts';
import { type Log, silentLog } from '../../lib/log.ts';
import { type QueueName, workMessageSchema } from '../../lib/queue/port.ts';
import { SqsDeadLetters, SqsWorkQueue } from '../../lib/queue/sqs.ts';
import { queueSettings } from '../../lib/scheduler/backoff.ts';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { DynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { MemoryStore } from '../../lib/store/memory.ts';
import type { Store } from '../../lib/store/port.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import { type QueueSettings, startEmbeddedSqs } from './embedded-sqs.ts';
import { startHttpServer } from './http-server.ts';
import { SqsPoller } from './sqs-poller.ts';
import { ScheduleTimer } from './timers.ts';

/** The input the EventBridge schedule sends the sweep (events/sweep-schedule.json). */
const sweepEvent = { source: 'differently.schedule', task: 'sweep' };
const reconcileEvent = { source: 'differently.schedule', task: 'reconcile' };
const poolRefreshEvent = { source: 'differently.schedule', task: 'pool-refresh' };

async function localStore(
  options: LocalRuntimeOptions,
  onLinking: (events: AuditEvent[]) => Promise<void>,
): Promise<{ store: Store; stop(): Promise<void> }> {
  if ((options.storeKind ?? 'memory') === 'memory')
    return { store: new MemoryStore({ onLinking }), stop: async () => {} };
  const emulator = options.dynamodbEndpoint === undefined ? await startDynamoDbLocal() : undefined;
  const client = localDynamoDbClient(options.dynamodbEndpoint ?? emulator?.endpoint ?? '');
  const tableName = 'differently';
  await ensureTable(client, tableName);
  return {
    store: new DynamoDbStore({ client: documentClient(client), tableName, onLinking }),
    async stop() {
      client.destroy();
      await emulator?.stop();
    },
  };
}

/** SQS sets MessageGroupId = org id on AWS; the embedded server does not return it, so read the body. */
function orgOfWorkMessage(message: Message): string {
  const group = message.Attributes?.MessageGroupId;
  if (group !== undefined) return group;
  try {
    const parsed = workMessageSchema.safeParse(JSON.parse(message.Body ?? ''));
    return parsed.success ? parsed.data.orgId : '';
  } catch {
    return '';
  }
}

/** The configuration `npm start` uses without --config: dev mode with the `local` and `fake` pools. */
export function defaultLocalConfig(): Config {
  return parseConfig({
    devMode: true,
    pools: [
      { name: 'local', adapter: 'devhost', config: { root: join(tmpdir(), 'differently-devhost') } },
      { name: 'fake', adapter: 'fake' },
    ],
    templates: [{ name: 'default', description: 'The pool default image or host environment' }],
  });
}

/** What a poller calls: the Lambda handler of an SQS-triggered worker. */
export type WorkerHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

export interface LocalRuntimeOptions {
  config?: Config;
  /**
   * `memory` (default), or `dynamodb`: DynamoDB Local started in this process, or the one at
   * `dynamodbEndpoint` when given, with the table created if missing.
   */
  storeKind?: 'memory' | 'dynamodb';
  dynamodbEndpoint?: string;
  /** 0 picks a free port. */
  port?: number;
  adminKey?: string;
  store?: Store;
  /** Adapters to use instead of building them from config, by pool name (tests inject fakes here). */
  adapters?: Record<string, ExecutionAdapter>;
  log?: Log;
  /** Queue settings instead of those derived from the scheduler timeouts (tests shorten them). */
  queues?: Partial<Record<QueueName, Partial<QueueSettings>>>;
  /** Messages a poller holds to build fair batches from (see SqsPoller); 10 makes delivery plain in-order. */
  pollerHoldCapacity?: number;
  /** Seconds between sweeps (EventBridge runs it every minute on AWS); 0 disables the timer. */
  sweepIntervalSeconds?: number;
  /** Seconds between reconcile passes (every minute on AWS); 0 disables the timer. */
  reconcileIntervalSeconds?: number;
  /**
   * Wraps each worker handler as the pollers call it: the soak runs workers in their own async context so
   * faults can strike them (a worker killed between two steps) and not the API.
   */
  wrapWorker?: (queue: QueueName, handler: WorkerHandler) => WorkerHandler;
  /** Seconds between pool probes (every minute on AWS); 0 disables the timer. */
  poolRefreshIntervalSeconds?: number;
}

export interface LocalRuntime {
  url: string;
  adminKey: string;
  plane: ControlPlane;
  sqs: Awaited<ReturnType<typeof startEmbeddedSqs>>;
  /** Stops the worker pollers and starts new ones (the soak's worker restarts). */
  restartWorkers(): Promise<void>;
  /** Every lifecycle event published so far, in order (the test hook). */
  events: LifecycleEvent[];
  stop(): Promise<void>;
}

/**
 * The whole control plane in one process: the api handler behind an HTTP server that builds API
 * Gateway events, the provision and terminate handlers behind pollers on an embedded SQS server.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const config = options.config ?? defaultLocalConfig();
  const log = options.log ?? silentLog;
  const adminKey = options.adminKey ?? `dadm_${randomBytes(24).toString('base64url')}`;
  // The same queue settings as the CDK app: visibility 6x the worker timeout, maxReceiveCount with the backoff.
  const settings = queueSettings(config);
  const sqs = await startEmbeddedSqs({
    provision: { ...settings.provision, ...options.queues?.provision },
    terminate: { ...settings.terminate, ...options.queues?.terminate },
  });
  // Lifecycle events: the same ones the bus receives on AWS, written to the log and kept for tests.
  const events: LifecycleEvent[] = [];
  const publisher: EventPublisher = {
    async publish(batch) {
      for (const event of batch) {
        events.push(event);
        log.info(`event ${event.detailType}`, { ...event.detail });
      }
    },
  };
  const backing =
    options.store === undefined
      ? await localStore(options, publishLifecycleEvents(publisher))
      : { store: options.store, stop: async () => {} };
  const pools = await buildPools(config, {
    log,
    store: backing.store,
    ...(options.adapters && { adapters: options.adapters }),
  });
  const plane = createControlPlane({
    config,
    store: backing.store,
    queue: new SqsWorkQueue(sqs.client, sqs.urls),
    deadLetters: new SqsDeadLetters(sqs.client, sqs.dlqUrls),
    pools,
    log,
    adminKey,
    validateResponses: true,
  });
  const workers = options.wrapWorker ?? ((_queue: QueueName, handler: WorkerHandler) => handler);
  const makePollers = () => [
    new SqsPoller({
      client: sqs.client,
      queueUrl: sqs.urls.provision,
      queueArn: sqs.arns.provision,
      handler: workers('provision', createProvisionHandler(plane)),
      log,
      groupOf: orgOfWorkMessage,
      ...(options.pollerHoldCapacity !== undefined && { holdCapacity: options.pollerHoldCapacity }),
    }),
    new SqsPoller({
      client: sqs.client,
      queueUrl: sqs.urls.terminate,
      queueArn: sqs.arns.terminate,
      handler: workers('terminate', createTerminateHandler(plane)),
      log,
    }),
  ];
  let pollers = makePollers();
  for (const poller of pollers) poller.start();
  const timers: ScheduleTimer[] = [];
  const sweepSeconds = options.sweepIntervalSeconds ?? 30;
  if (sweepSeconds > 0) {
    const sweepHandler = createSweepHandler(plane);
    timers.push(new ScheduleTimer('sweep', sweepSeconds * 1000, () => sweepHandler(sweepEvent), log));
  }
  const refreshSeconds = options.poolRefreshIntervalSeconds ?? 5;
  if (refreshSeconds > 0) {
    const refreshHandler = createPoolRefreshHandler(plane);
    timers.push(
      new ScheduleTimer('pool-refresh', refreshSeconds * 1000, () => refreshHandler(poolRefreshEvent), log),
    );
  }
  const reconcileSeconds = options.reconcileIntervalSeconds ?? 30;
  if (reconcileSeconds > 0) {
    const reconcileHandler = createReconcileHandler(plane);
    timers.push(
      new ScheduleTimer('reconcile', reconcileSeconds * 1000, () => reconcileHandler(reconcileEvent), log),
    );
  }
  for (const timer of timers) timer.start();
  const http = await startHttpServer(createStreamingApiHandler(plane), options.port ?? 0);
  return {
    url: http.url,
    adminKey,
    plane,
    sqs,
    events,
    async restartWorkers() {
      // As after a crash: messages a poller held but had not dispatched come back after their visibility timeout.
      await Promise.all(pollers.map((poller) => poller.stop()));
      pollers = makePollers();
      for (const poller of pollers) poller.start();
    },
    async stop() {
      await http.stop();
      await Promise.all(timers.map((timer) => timer.stop()));
      await Promise.all(pollers.map((poller) => poller.stop()));
      await sqs.stop();
      await backing.stop();
    },
  };
}
