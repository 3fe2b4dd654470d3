import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeadLetter, DeadLetterSource, QueueName, SendOptions, WorkMessage, WorkQueue } from './port.ts';

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

/** Reads the dead-letter queues so the sweep can surface what they hold. */
export class SqsDeadLetters implements DeadLetterSource {
  readonly #client: SQSClient;
  readonly #urls: Partial<Record<QueueName, string>>;

  /** The sweep reads the sandbox queues' DLQs; the webhooks DLQ is the operator's to inspect. */
  constructor(client: SQSClient, dlqUrls: Partial<Record<QueueName, string>>) {
    this.#client = client;
    this.#urls = dlqUrls;
  }

  async receive(queue: QueueName, max: number): Promise<DeadLetter[]> {
    const url = this.#urls[queue];
    if (url === undefined) return [];
    const result = await this.#client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(Math.max(max, 1), 10),
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    return (result.Messages ?? []).map((message) => ({
      body: message.Body ?? '',
      receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? '0'),
      ack: async () => {
        await this.#client.send(
          new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle ?? '' }),
        );
      },
    }));
  }
}
