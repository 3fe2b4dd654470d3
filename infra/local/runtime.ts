import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Message } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEvent, Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { defaultDevhostRoot, devhostConfigSchema } from '../../adapters/devhost/config.ts';
import { endDevhostCommands, reapDevhostFolders } from '../../adapters/devhost/devhost-adapter.ts';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { requireValidPools } from '../../adapters/kinds.ts';
import { apiFunction } from '../../functions/api.ts';
import { apiStreamFunction } from '../../functions/api-stream.ts';
import { type FunctionDefinition, handlerFor } from '../../functions/entry.ts';
import { metricsNamespace } from '../../functions/environment.ts';
import type { Observability } from '../../functions/observability.ts';
import { operationsFunction } from '../../functions/operations.ts';
import { poolRefreshFunction } from '../../functions/pool-refresh.ts';
import { provisionFunction } from '../../functions/provision.ts';
import { reconcileFunction } from '../../functions/reconcile.ts';
import { scheduleEvent } from '../../functions/schedule-event.ts';
import { sweepFunction } from '../../functions/sweep.ts';
import { terminateFunction } from '../../functions/terminate.ts';
import { XRayTracer } from '../../functions/tracing/xray-tracer.ts';
import { webhooksFunction } from '../../functions/webhooks.ts';
import { wireContainer } from '../../functions/wiring.ts';
import type { ExecutionAdapter } from '../../lib/adapter/port.ts';
import type { AuditEvent } from '../../lib/audit/chain.ts';
import { type Config, parseConfig } from '../../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../../lib/control-plane.ts';
import {
  allPublishers,
  type EventPublisher,
  type LifecycleEvent,
  publishLifecycleEvents,
} from '../../lib/events/port.ts';
import { type FunctionName, functionTimeouts } from '../../lib/function-timeouts.ts';
import { streamedRouteMatcher } from '../../lib/http/streamed-routes.ts';
import { type Log, silentLog } from '../../lib/log.ts';
import { type QueueName, queueNames, workMessageSchema } from '../../lib/queue/port.ts';
import { SqsDeadLetters, SqsWorkQueue } from '../../lib/queue/sqs.ts';
import { queueSettings } from '../../lib/scheduler/backoff.ts';
import { requeueUnfinished } from '../../lib/scheduler/sweep.ts';
import { documentClient, localDynamoDbClient } from '../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../lib/store/dynamodb/table.ts';
import { memoryStore } from '../../lib/store/memory.ts';
import type { Store } from '../../lib/store/port.ts';
import { WebhookFanout } from '../../lib/webhooks/fanout.ts';
import { declaredStreamedRoutes } from '../declared-routes.ts';
import { apiGateway } from './api-gateway.ts';
import { localConsoleAssets } from './console-assets.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import { type QueueSettings, startEmbeddedSqs } from './embedded-sqs.ts';
import { FunctionContainers } from './function-containers.ts';
import { startHttpServer } from './http-server.ts';
import { SqsPoller } from './sqs-poller.ts';
import { ScheduleTimer } from './timers.ts';

/** The inputs the EventBridge schedules send (events/*-schedule.json). */
const scheduleEvents = {
  sweep: scheduleEvent('sweep'),
  reconcile: scheduleEvent('reconcile'),
  poolRefresh: scheduleEvent('pool-refresh'),
};

async function localStore(
  options: LocalRuntimeOptions,
  onLinking: (events: AuditEvent[]) => Promise<void>,
): Promise<{ store: () => Store; table?: { endpoint: string; tableName: string }; stop(): Promise<void> }> {
  if ((options.storeKind ?? 'memory') === 'memory') {
    // The memory store stands for the table itself: every container shares it, as they share DynamoDB.
    const memory = memoryStore({ onLinking });
    return { store: () => memory, stop: async () => {} };
  }
  const emulator =
    options.dynamodbEndpoint === undefined
      ? await startDynamoDbLocal(options.dataDir === undefined ? {} : { dataDir: options.dataDir })
      : undefined;
  const endpoint = options.dynamodbEndpoint ?? emulator?.endpoint ?? '';
  const tableName = 'differently';
  const clients: ReturnType<typeof localDynamoDbClient>[] = [localDynamoDbClient(endpoint)];
  await ensureTable(clients[0] as ReturnType<typeof localDynamoDbClient>, tableName);
  return {
    table: { endpoint, tableName },
    // Each container its own client, as each Lambda container constructs its own.
    store: () => {
      const client = localDynamoDbClient(endpoint);
      clients.push(client);
      return dynamoDbStore({ client: documentClient(client), tableName, onLinking });
    },
    async stop() {
      for (const client of clients) client.destroy();
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
      { name: 'local', adapter: 'devhost', config: { root: defaultDevhostRoot() } },
      { name: 'fake', adapter: 'fake' },
    ],
    templates: [{ name: 'default', description: 'The pool default image or host environment' }],
    // E2B's SDK names no pool: its sandboxes run real commands on devhost, never on the simulated fake.
    // @e2b/code-interpreter's default template: the host's environment, with its kernel's stdin.
    e2b: { allowedPools: ['local'], templates: { 'code-interpreter-v1': { capabilities: ['exec.stdin'] } } },
  });
}

/** What a poller calls: the Lambda handler of an SQS-triggered worker. */
/** A worker as the pollers call it (the containers add the Lambda context). */
export type WorkerHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;
/** What a timer calls: the Lambda handler of a scheduled function. */
type ScheduledHandler = (event: unknown, context: Context) => Promise<unknown>;

export interface LocalRuntimeOptions {
  config?: Config;
  /**
   * `memory` (default), or `dynamodb`: DynamoDB Local started in this process, or the one at
   * `dynamodbEndpoint` when given, with the table created if missing.
   */
  storeKind?: 'memory' | 'dynamodb';
  dynamodbEndpoint?: string;
  /**
   * With the dynamodb store and no endpoint: keep DynamoDB Local's tables in this folder, so a restart
   * finds orgs, keys and sandboxes again (and requeues their unfinished work at once). Unset: in memory.
   */
  dataDir?: string;
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
  /** Simulated containers per function (default 2): nothing may rely on two invocations sharing memory. */
  containers?: number;
}

export interface LocalRuntime {
  url: string;
  adminKey: string;
  /**
   * An operator's handle on the same store, queues and backends (like the AWS console): a control plane
   * built as a container is, serving no traffic. Tests use it to set up and inspect state.
   */
  plane: ControlPlane;
  sqs: Awaited<ReturnType<typeof startEmbeddedSqs>>;
  /** Each function's simulated containers (cold starts, invocations per container). */
  functions: Record<FunctionName, FunctionContainers<unknown>>;
  /** Stops the worker pollers and starts new ones (the soak's worker restarts). */
  restartWorkers(): Promise<void>;
  /** Every lifecycle event published so far, in order (the test hook). */
  events: LifecycleEvent[];
  /** DynamoDB Local's endpoint and the table, with the dynamodb store (for `sam local invoke`). */
  table?: { endpoint: string; tableName: string };
  stop(): Promise<void>;
}

/**
 * The routes the control plane declares streamed run on the response-streaming function, as API Gateway
 * routes them (infra/cdk public-api, from the same list).
 */
const isStreamedRoute = streamedRouteMatcher(declaredStreamedRoutes());
function isStreamRoute(event: APIGatewayProxyEvent): boolean {
  return isStreamedRoute(event.httpMethod, event.path);
}

/**
 * Powertools' tools for one local container: logs at WARN when the runtime has a log to write to (silent
 * otherwise, as in tests), no EMF lines (they are for CloudWatch; locally they would only flood stdout),
 * and the tracer off (there is no X-Ray daemon locally).
 */
function localObservability(name: string, verbose: boolean): Observability {
  const previous = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  try {
    return {
      logger: new Logger({ serviceName: `differently-${name}`, logLevel: verbose ? 'WARN' : 'SILENT' }),
      metrics: new Metrics({
        namespace: metricsNamespace,
        serviceName: `differently-${name}`,
        // Its warnings (an invocation without metrics, a dimension two overlapping local invocations
        // both set) are about EMF output that is off here.
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      }),
      tracer: new XRayTracer({ serviceName: `differently-${name}`, enabled: false }),
    };
  } finally {
    if (previous === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = previous;
  }
}

/**
 * The fake adapter is its own backend: one instance per pool, shared by every container, as a real
 * backend is shared by every Lambda container.
 */
function fakeBackends(config: Config): Record<string, ExecutionAdapter> {
  return Object.fromEntries(
    config.pools.filter((pool) => pool.adapter === 'fake').map((pool) => [pool.name, new FakeAdapter()]),
  );
}

/**
 * The whole control plane in one process, shaped as on AWS: every function (api, apiStream, the three
 * workers, the three scheduled ones) runs in its own set of simulated containers, each cold-started by
 * the same wiring as a Lambda container and sharing nothing with the others but the store, the queues
 * and the backends. API Gateway's and Lambda's limits (lib/limits.ts) are enforced on every invocation.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const config = options.config ?? defaultLocalConfig();
  // Refused before anything starts (no DynamoDB Local or SQS server left behind by a bad config).
  requireValidPools(config, 'the config');
  const log = options.log ?? silentLog;
  const adminKey = options.adminKey ?? `dadm_${randomBytes(24).toString('base64url')}`;
  // The same queue settings as the CDK app: visibility 6x the worker timeout, maxReceiveCount with the backoff.
  const settings = queueSettings(config);
  const sqs = await startEmbeddedSqs({
    provision: { ...settings.provision, ...options.queues?.provision },
    terminate: { ...settings.terminate, ...options.queues?.terminate },
    operations: { ...settings.operations, ...options.queues?.operations },
    webhooks: { ...settings.webhooks, ...options.queues?.webhooks },
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
  // Webhook deliveries fan out from the same hook, once the store and queues exist.
  const fanout = new WebhookFanout();
  const backing =
    options.store === undefined
      ? await localStore(options, publishLifecycleEvents(allPublishers(publisher, fanout)))
      : { store: () => options.store as Store, table: undefined, stop: async () => {} };
  const backends = { ...fakeBackends(config), ...options.adapters };
  // What a stop leaves: a store given by the caller, or DynamoDB Local with its data kept, lasts.
  const storeLasts =
    options.store !== undefined ||
    (options.storeKind === 'dynamodb' &&
      (options.dataDir !== undefined || options.dynamodbEndpoint !== undefined));
  const devhostRoots = config.pools
    .filter((pool) => pool.adapter === 'devhost')
    .map((pool) => devhostConfigSchema.parse(pool.config ?? {}).root);
  const coldStart = () =>
    wireContainer({
      config,
      store: backing.store(),
      queue: new SqsWorkQueue(sqs.client, sqs.urls),
      deadLetters: new SqsDeadLetters(sqs.client, sqs.dlqUrls),
      log,
      adminKey,
      adapters: backends,
      validateResponses: true,
      consoleAssets: localConsoleAssets,
    });
  fanout.attach({ store: backing.store(), queue: new SqsWorkQueue(sqs.client, sqs.urls) });
  const plane = createControlPlane(await coldStart());
  const timeouts = functionTimeouts(config);
  const count = options.containers ?? 2;
  // Each container runs the function's own middleware stack (functions/middlewares.ts) with its own tools.
  const containers = <E, R>(definition: FunctionDefinition<E, R>) =>
    new FunctionContainers<(event: E, context: Context) => Promise<R>>({
      name: definition.name,
      count,
      coldStart: async () =>
        handlerFor(
          definition,
          await coldStart(),
          localObservability(definition.name, options.log !== undefined),
        ),
      timeoutSeconds: timeouts[definition.name as FunctionName],
      log,
    });
  const functions = {
    api: containers(apiFunction),
    apiStream: containers(apiStreamFunction),
    provision: containers(provisionFunction),
    terminate: containers(terminateFunction),
    operations: containers(operationsFunction),
    webhooks: containers(webhooksFunction),
    sweep: containers(sweepFunction),
    reconcile: containers(reconcileFunction),
    poolRefresh: containers(poolRefreshFunction),
  };
  const workers = options.wrapWorker ?? ((_queue: QueueName, handler: WorkerHandler) => handler);
  const workerFunctions: Record<
    QueueName,
    FunctionContainers<(event: SQSEvent, context: Context) => Promise<SQSBatchResponse>>
  > = {
    provision: functions.provision,
    terminate: functions.terminate,
    operations: functions.operations,
    webhooks: functions.webhooks,
  };
  const invokeWorker = (queue: QueueName): WorkerHandler =>
    workers(queue, (event) => workerFunctions[queue].invoke((handler, context) => handler(event, context)));
  const makePollers = () =>
    queueNames.map(
      (queue) =>
        new SqsPoller({
          client: sqs.client,
          queueUrl: sqs.urls[queue],
          queueArn: sqs.arns[queue],
          handler: invokeWorker(queue),
          log,
          ...(queue === 'provision' && { groupOf: orgOfWorkMessage }),
          ...(queue === 'provision' &&
            options.pollerHoldCapacity !== undefined && { holdCapacity: options.pollerHoldCapacity }),
        }),
    );
  let pollers = makePollers();
  for (const poller of pollers) poller.start();
  // The table outlived the last run, its queues did not: what was under way is asked for again now.
  if (options.dataDir !== undefined && options.dynamodbEndpoint === undefined) await requeueUnfinished(plane);
  const timers: ScheduleTimer[] = [];
  const scheduled: Record<'sweep' | 'reconcile' | 'poolRefresh', FunctionContainers<ScheduledHandler>> = {
    sweep: functions.sweep,
    reconcile: functions.reconcile,
    poolRefresh: functions.poolRefresh,
  };
  const schedule = (name: keyof typeof scheduled, seconds: number) => {
    if (seconds <= 0) return;
    const event = scheduleEvents[name];
    timers.push(
      new ScheduleTimer(
        name,
        seconds * 1000,
        () => scheduled[name].invoke((handler, context) => handler(event, context)),
        log,
      ),
    );
  };
  schedule('sweep', options.sweepIntervalSeconds ?? 30);
  schedule('poolRefresh', options.poolRefreshIntervalSeconds ?? 5);
  schedule('reconcile', options.reconcileIntervalSeconds ?? 30);
  for (const timer of timers) timer.start();
  const http = await startHttpServer(
    apiGateway({ buffered: functions.api, streaming: functions.apiStream, isStreamRoute, log }),
    options.port ?? 0,
  );
  return {
    url: http.url,
    adminKey,
    plane,
    sqs,
    events,
    ...(backing.table !== undefined && { table: backing.table }),
    functions: functions as Record<FunctionName, FunctionContainers<unknown>>,
    async restartWorkers() {
      // As after a crash: messages a poller held but had not dispatched come back after their visibility timeout.
      await Promise.all(pollers.map((poller) => poller.stop()));
      pollers = makePollers();
      for (const poller of pollers) poller.start();
    },
    async stop() {
      await http.stop();
      // Host processes of devhost sandboxes end with the runtime.
      endDevhostCommands();
      await Promise.all(timers.map((timer) => timer.stop()));
      await Promise.all(pollers.map((poller) => poller.stop()));
      await sqs.stop();
      await backing.stop();
      // A store that keeps nothing leaves no record of the devhost sandboxes: their folders go too.
      if (!storeLasts) await reapDevhostFolders(devhostRoots);
    },
  };
}
