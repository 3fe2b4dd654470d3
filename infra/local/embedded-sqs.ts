import { Server as NetServer } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import type { QueueName } from '../../lib/queue/port.ts';
import type { QueueSettings as WorkQueueSettings } from '../../lib/scheduler/backoff.ts';

export type QueueSettings = Pick<WorkQueueSettings, 'visibilityTimeoutSeconds' | 'maxReceiveCount'>;

export interface EmbeddedSqs {
  endpoint: string;
  client: SQSClient;
  urls: Record<QueueName, string>;
  dlqUrls: Record<QueueName, string>;
  arns: Record<QueueName, string>;
  /** Messages of a queue by state, without consuming them (inflight ones with their visibility deadline). */
  inspect(queue: QueueName, dlq?: boolean): QueueContents;
  stop(): Promise<void>;
}

export interface QueueContents {
  ready: { body: string }[];
  delayed: { body: string }[];
  inflight: { body: string; visibilityDeadline: number }[];
}

const region = 'us-east-1';

/**
 * fauxqs takes no credentials and listens on 0.0.0.0 whatever its options say (its `host` names the
 * queue URLs only): anything that reaches the machine could read and plant messages. While it starts, a
 * server asked to listen on every interface is bound to 127.0.0.1 instead.
 */
async function onLoopbackOnly<T>(start: () => Promise<T>): Promise<T> {
  const listen = NetServer.prototype.listen;
  NetServer.prototype.listen = function (this: NetServer, ...args: unknown[]) {
    const [options] = args;
    if (typeof options === 'object' && options !== null && 'host' in options) {
      args[0] = { ...options, host: '127.0.0.1' };
    }
    return Reflect.apply(listen, this, args);
  } as typeof listen;
  try {
    return await start();
  } finally {
    NetServer.prototype.listen = listen;
  }
}

/**
 * An SQS-protocol server in this process (fauxqs), with the same queues, DLQs and redrive the CDK app
 * creates. Clients speak real SQS to it through the AWS SDK.
 */
export async function startEmbeddedSqs(settings: Record<QueueName, QueueSettings>): Promise<EmbeddedSqs> {
  const server = await onLoopbackOnly(() =>
    startFauxqs({ port: 0, host: '127.0.0.1', logger: false, defaultRegion: region }),
  );
  const endpoint = server.address;
  const urls = {} as Record<QueueName, string>;
  const dlqUrls = {} as Record<QueueName, string>;
  const arns = {} as Record<QueueName, string>;
  for (const [name, queue] of Object.entries(settings) as [QueueName, QueueSettings][]) {
    const dlq = server.createQueue(`differently-${name}-dlq`, {
      attributes: { MessageRetentionPeriod: '1209600' },
    });
    const main = server.createQueue(`differently-${name}`, {
      attributes: {
        VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlq.queueArn,
          maxReceiveCount: queue.maxReceiveCount,
        }),
      },
    });
    urls[name] = main.queueUrl;
    dlqUrls[name] = dlq.queueUrl;
    arns[name] = main.queueArn;
  }
  const client = new SQSClient({
    endpoint,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  return {
    endpoint,
    client,
    urls,
    dlqUrls,
    arns,
    inspect(queue, dlq = false) {
      const state = server.inspectQueue(`differently-${queue}${dlq ? '-dlq' : ''}`);
      const messages = state?.messages;
      return {
        ready: (messages?.ready ?? []).map((m) => ({ body: m.body })),
        delayed: (messages?.delayed ?? []).map((m) => ({ body: m.body })),
        inflight: (messages?.inflight ?? []).map((entry) => ({
          body: entry.message.body,
          visibilityDeadline: entry.visibilityDeadline,
        })),
      };
    },
    async stop() {
      client.destroy();
      await server.stop();
    },
  };
}
