import { readFile } from 'node:fs/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { buildPools } from '../adapters/registry.ts';
import type { ExecutionAdapter } from '../lib/adapter/contract.ts';
import { type Config, parseConfigText } from '../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../lib/control-plane.ts';
import { type CredentialResolver, credentialResolver } from '../lib/credentials.ts';
import { publishLifecycleEvents } from '../lib/events.ts';
import { EventBridgePublisher } from '../lib/events-eventbridge.ts';
import type { Log } from '../lib/log.ts';
import type { DeadLetterSource, WorkQueue } from '../lib/queue/port.ts';
import { SqsDeadLetters, SqsWorkQueue } from '../lib/queue/sqs.ts';
import { documentClient } from '../lib/store/dynamodb/client.ts';
import { DynamoDbStore } from '../lib/store/dynamodb/dynamodb-store.ts';
import { MemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/port.ts';
import { env, requireEnv } from './environment.ts';

export const logger = new Logger({ serviceName: 'differently' });

/** Powertools' Logger behind the lib Log port. */
export function powertoolsLog(base: Logger = logger): Log {
  return {
    debug: (message, extra) => base.debug(message, extra ?? {}),
    info: (message, extra) => base.info(message, extra ?? {}),
    warn: (message, extra) => base.warn(message, extra ?? {}),
    error: (message, extra) => base.error(message, extra ?? {}),
  };
}

async function loadConfig(): Promise<Config> {
  const inline = process.env[env.configJson];
  if (inline !== undefined && inline !== '') return parseConfigText(inline, env.configJson);
  const path = requireEnv(env.configPath)[env.configPath] ?? '';
  return parseConfigText(await readFile(path, 'utf8'), path);
}

function storeFromEnv(): Store {
  if (process.env[env.store] === 'memory') return new MemoryStore();
  const table = requireEnv(env.tableName)[env.tableName] ?? '';
  const endpoint = process.env[env.dynamodbEndpoint];
  const client = new DynamoDBClient(endpoint === undefined || endpoint === '' ? {} : { endpoint });
  const bus = process.env[env.eventBusName];
  return new DynamoDbStore({
    client: documentClient(client),
    tableName: table,
    ...(bus !== undefined &&
      bus !== '' && {
        onLinking: publishLifecycleEvents(new EventBridgePublisher(new EventBridgeClient({}), bus)),
      }),
  });
}

/**
 * The admin key from Secrets Manager (cached by Powertools), or from the environment when run locally;
 * undefined in functions given neither (the workers).
 */
async function adminKeyFromEnv(): Promise<string | undefined> {
  const arn = process.env[env.adminKeySecretArn];
  if (arn !== undefined && arn !== '') {
    const secret = await getSecret(arn, { maxAge: 300 });
    if (typeof secret !== 'string' || secret.length < 16)
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
  validateResponses?: boolean;
}

/**
 * A cold start: the pools (adapters built, capabilities read) and the control plane of one container.
 * Lambda runs it once per container through controlPlaneFromEnv; the local runtime once per simulated
 * container, so both build containers the same way.
 */
export async function wireControlPlane(parts: ContainerParts): Promise<ControlPlane> {
  const { adapters, resolveCredential, ...deps } = parts;
  const pools = await buildPools(parts.config, {
    log: parts.log,
    store: parts.store,
    ...(resolveCredential !== undefined && { resolveCredential }),
    ...(adapters !== undefined && { adapters }),
  });
  return createControlPlane({ ...deps, pools });
}

/** The control plane of one Lambda container, built once at cold start from the environment contract. */
export async function controlPlaneFromEnv(): Promise<ControlPlane> {
  const vars = requireEnv(env.provisionQueueUrl, env.terminateQueueUrl, env.operationsQueueUrl);
  const admin = await adminKeyFromEnv();
  const config = await loadConfig();
  const log = powertoolsLog();
  const endpoint = process.env[env.sqsEndpoint];
  const sqs = new SQSClient(endpoint === undefined || endpoint === '' ? {} : { endpoint });
  const provisionDlq = process.env[env.provisionDlqUrl];
  const terminateDlq = process.env[env.terminateDlqUrl];
  const operationsDlq = process.env[env.operationsDlqUrl];
  return wireControlPlane({
    config,
    store: storeFromEnv(),
    ...(provisionDlq &&
      terminateDlq &&
      operationsDlq && {
        deadLetters: new SqsDeadLetters(sqs, {
          provision: provisionDlq,
          terminate: terminateDlq,
          operations: operationsDlq,
        }),
      }),
    queue: new SqsWorkQueue(sqs, {
      provision: vars[env.provisionQueueUrl] ?? '',
      terminate: vars[env.terminateQueueUrl] ?? '',
      operations: vars[env.operationsQueueUrl] ?? '',
    }),
    log,
    // Provider credentials by reference: environment locally, Secrets Manager (cached 5 minutes) on AWS.
    resolveCredential: credentialResolver(async (arn) => {
      const value = await getSecret(arn, { maxAge: 300 });
      return typeof value === 'string' ? value : undefined;
    }),
    ...(admin !== undefined && { adminKey: admin }),
  });
}

/** Builds a value once per container on first use; a failed build is retried on the next call. */
export function once<T>(build: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= build().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
