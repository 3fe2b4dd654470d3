import { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { QueueName } from '../../../lib/queue/port.ts';
import type { QueueSettings } from '../../../lib/scheduler/backoff.ts';

export interface WorkQueuesProps {
  /** Per queue: visibility and maxReceiveCount, from lib/scheduler/backoff.ts queueSettings. */
  readonly settings: Record<QueueName, QueueSettings>;
}

export interface WorkQueue {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
}

/**
 * The provision, terminate, operations and webhooks queues with their dead-letter queues: server-side encryption, TLS only,
 * visibility six times the worker's timeout, and the maxReceiveCount chosen with the backoff.
 * Messages carry MessageGroupId = org id, which makes these standard queues fair queues.
 */
export class WorkQueues extends Construct {
  readonly provision: WorkQueue;
  readonly terminate: WorkQueue;
  /** Lifecycle calls and snapshots the API recorded and the operations worker finishes. */
  readonly operations: WorkQueue;
  /** Webhook deliveries: one message per lifecycle event and endpoint, retried with backoff. */
  readonly webhooks: WorkQueue;

  constructor(scope: Construct, id: string, props: WorkQueuesProps) {
    super(scope, id);
    this.provision = this.#pair('Provision', props.settings.provision);
    this.terminate = this.#pair('Terminate', props.settings.terminate);
    this.operations = this.#pair('Operations', props.settings.operations);
    this.webhooks = this.#pair('Webhooks', props.settings.webhooks);
  }

  #pair(id: string, settings: QueueSettings): WorkQueue {
    const deadLetterQueue = new Queue(this, `${id}DeadLetters`, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const queue = new Queue(this, id, {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(settings.visibilityTimeoutSeconds),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
    });
    return { queue, deadLetterQueue };
  }
}
