import { readFile } from 'node:fs/promises';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MiddlewareStack } from '@smithy/types';
import { requireValidPools } from '../adapters/kinds.ts';
import { buildPools } from '../adapters/registry.ts';
import type { AdapterCallTracer } from '../adapters/traced-adapter.ts';
import type { ExecutionAdapter } from '../lib/adapter/port.ts';
import { type Config, parseConfigText } from '../lib/config.ts';
import type { ConsoleAssets } from '../lib/console/assets.ts';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { EventBridgePublisher } from '../lib/events/eventbridge.ts';
import { allPublishers, type EventPublisher, publishLifecycleEvents } from '../lib/events/port.ts';
import type { Log } from '../lib/log.ts';
import { type CredentialResolver, credentialResolver } from '../lib/pools/credentials.ts';
import type { DeadLetterSource, WorkQueue } from '../lib/queue/port.ts';
import { SqsDeadLetters, SqsWorkQueue } from '../lib/queue/sqs.ts';
import { documentClient } from '../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../lib/store/dynamodb/dynamodb-store.ts';
import type { Store } from '../lib/store/port.ts';
import { WebhookFanout } from '../lib/webhooks/fanout.ts';
import { bundledConsoleAssets } from './console-assets.ts';
import { env, requireAllEnv, requireEnv } from './environment.ts';
import { observability, powertoolsLog } from './observability.ts';

/**
 * AWS SDK clients as this container makes them: traced (each call a subsegment, functions/tracing/),
 * with endpoints from the SDK's own settings (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, ...), which
 * is how local runs and `sam local invoke` point them at DynamoDB Local and a local SQS.
 */
const traced = <I extends object, O extends object, C extends { middlewareStack: MiddlewareStack<I, O> }>(
  client: C & { middlewareStack: MiddlewareStack<I, O> },
): C => observability.tracer.captureAWSv3Client(client);

/**
 * An adapter call as an X-Ray subsegment `<kind>.<method>` annotated with the pool and the adapter kind,
 * its error recorded; the provider's HTTP requests (fetch, traced by the tracer) nest beneath it.
 */
const traceAdapterCall: AdapterCallTracer = (pool, kind, method, call) =>
  observability.tracer.subsegment(`${kind}.${method}`, { pool, adapter: kind }, call);

/** Secrets (the admin key, provider credentials) through Powertools' cache, over a traced client. */
const secrets = new SecretsProvider({ awsSdkV3Client: traced(new SecretsManagerClient({})) });

async function secretString(arn: string): Promise<string | undefined> {
  const value = await secrets.get(arn, { maxAge: 300 });
  return typeof value === 'string' ? value : undefined;
}

async function loadConfig(): Promise<Config> {
  const inline = process.env[env.configJson];
  if (inline !== undefined && inline !== '') return parseConfigText(inline, env.configJson);
  const path = requireEnv(env.configPath);
  return parseConfigText(await readFile(path, 'utf8'), path);
}

/**
 * The store, whose linking hook publishes lifecycle events to the bus and fans them out to webhooks. The
 * memory store (STORE=memory, `sam local invoke` without a table) is imported only when asked for: a
 * deployed function's cold start does not compile it.
 */
async function storeFromEnv(fanout: WebhookFanout): Promise<Store> {
  if (process.env[env.store] === 'memory') return (await import('../lib/store/memory.ts')).memoryStore();
  const table = requireEnv(env.tableName);
  const bus = process.env[env.eventBusName];
  const publishers: EventPublisher[] = [fanout];
  if (bus !== undefined && bus !== '') {
    publishers.push(new EventBridgePublisher(traced(new EventBridgeClient({})), bus));
  }
  return dynamoDbStore({
    client: documentClient(traced(new DynamoDBClient({}))),
    tableName: table,
    onLinking: publishLifecycleEvents(allPublishers(...publishers)),
  });
}

/**
 * The admin key from Secrets Manager (cached by Powertools), or from the environment when run locally;
 * undefined in functions given neither (the workers).
 */
async function adminKeyFromEnv(): Promise<string | undefined> {
  const arn = process.env[env.adminKeySecretArn];
  if (arn !== undefined && arn !== '') {
    const secret = await secretString(arn);
    if (secret === undefined || secret.length < 16)
      throw new Error(`the admin key secret ${arn} is empty or too short`);
    return secret;
  }
  const local = process.env[env.adminKey];
  return local === undefined || local === '' ? undefined : local;
}

/** What a container's control plane is built from; the environment on Lambda, the local runtime locally. */
export interface ContainerParts {
  config: Config;
  store: Store;
  queue: WorkQueue;
  deadLetters?: DeadLetterSource;
  log: Log;
  adminKey?: string;
  resolveCredential?: CredentialResolver;
  /** Backends shared by every container (the local runtime's fake pools, tests' injected adapters). */
  adapters?: Record<string, ExecutionAdapter>;
  /** Traces every backend call (the X-Ray tracer on Lambda). */
  traceAdapterCall?: AdapterCallTracer;
  validateResponses?: boolean;
  /** The web console's files (the api function serves them under /console). */
  consoleAssets?: ConsoleAssets;
}

/**
 * A cold start: the pools (adapters built, capabilities read) and the other parts of one container, which
 * each function turns into what it uses (functions/entry.ts). Lambda runs it once per container through
 * containerFromEnv; the local runtime once per simulated container, so both build containers the same way.
 */
export async function wireContainer(parts: ContainerParts): Promise<ControlPlaneDeps> {
  const { adapters, resolveCredential, traceAdapterCall, ...deps } = parts;
  // What preflight and synth refuse, a cold start refuses too, before building anything.
  requireValidPools(parts.config, 'the config');
  const pools = await buildPools(parts.config, {
    log: parts.log,
    store: parts.store,
    ...(resolveCredential !== undefined && { resolveCredential }),
    ...(adapters !== undefined && { adapters }),
    ...(traceAdapterCall !== undefined && { traceAdapterCall }),
  });
  return { ...deps, pools };
}

/** The parts of one Lambda container, built once at cold start from the environment contract. */
export async function containerFromEnv(): Promise<ControlPlaneDeps> {
  requireAllEnv(env.provisionQueueUrl, env.terminateQueueUrl, env.operationsQueueUrl, env.webhooksQueueUrl);
  const admin = await adminKeyFromEnv();
  const config = await loadConfig();
  const log = powertoolsLog();
  const sqs = traced(new SQSClient({}));
  const provisionDlq = process.env[env.provisionDlqUrl];
  const terminateDlq = process.env[env.terminateDlqUrl];
  const operationsDlq = process.env[env.operationsDlqUrl];
  const fanout = new WebhookFanout();
  const store = await storeFromEnv(fanout);
  const queue = new SqsWorkQueue(sqs, {
    provision: requireEnv(env.provisionQueueUrl),
    terminate: requireEnv(env.terminateQueueUrl),
    operations: requireEnv(env.operationsQueueUrl),
    webhooks: requireEnv(env.webhooksQueueUrl),
  });
  fanout.attach({ store, queue });
  return wireContainer({
    consoleAssets: bundledConsoleAssets(),
    config,
    store,
    ...(provisionDlq &&
      terminateDlq &&
      operationsDlq && {
        deadLetters: new SqsDeadLetters(sqs, {
          provision: provisionDlq,
          terminate: terminateDlq,
          operations: operationsDlq,
        }),
      }),
    queue,
    log,
    // Provider credentials by reference: environment locally, Secrets Manager (cached 5 minutes) on AWS.
    resolveCredential: credentialResolver(secretString),
    traceAdapterCall: traceAdapterCall,
    ...(admin !== undefined && { adminKey: admin }),
  });
}
