import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueName, SendOptions, WorkMessage, WorkQueue } from './port.ts';

/** SQS caps DelaySeconds and visibility at these values. */
const maxDelaySeconds = 900;
const maxVisibilitySeconds = 43_200;

/**
 * The work queues on SQS. Every message carries MessageGroupId = org id: on a standard queue that is
 * SQS fair queueing, so one org's backlog cannot starve another org's work.
 */
export class SqsWorkQueue implements WorkQueue {
  readonly #client: SQSClient;
  readonly #urls: Record<QueueName, string>;

  constructor(client: SQSClient, urls: Record<QueueName, string>) {
    this.#client = client;
    this.#urls = urls;
  }

  async send(queue: QueueName, message: WorkMessage, options: SendOptions = {}): Promise<void> {
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.#urls[queue],
        MessageBody: JSON.stringify(message),
        MessageGroupId: message.orgId,
        DelaySeconds: clamp(options.delaySeconds ?? 0, maxDelaySeconds),
      }),
    );
  }

  async changeVisibility(queue: QueueName, receiptHandle: string, seconds: number): Promise<void> {
    await this.#client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.#urls[queue],
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: clamp(seconds, maxVisibilitySeconds),
      }),
    );
  }
}

function clamp(seconds: number, max: number): number {
  return Math.min(Math.max(Math.round(seconds), 0), max);
}
