import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError, type Log } from '../../lib/log.ts';

export interface PollerOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: (event: SQSEvent) => Promise<SQSBatchResponse>;
  log: Log;
  /** Messages per invocation, as the event source mapping's BatchSize (at most 10 per receive). */
  batchSize?: number;
  /** Parallel invocations, as the mapping's MaximumConcurrency. */
  concurrency?: number;
}

/**
 * Behaves like a Lambda SQS event source mapping: receives batches, invokes the handler, deletes the
 * records that succeeded, and leaves the ones reported in batchItemFailures (or a whole batch whose
 * invocation threw) to reappear when their visibility timeout ends, including a timeout the handler
 * changed for backoff.
 */
export class SqsPoller {
  readonly #options: Required<PollerOptions>;
  readonly #abort = new AbortController();
  #loops: Promise<void>[] = [];

  constructor(options: PollerOptions) {
    this.#options = { batchSize: 10, concurrency: 2, ...options };
  }

  start(): void {
    for (let i = 0; i < this.#options.concurrency; i++) this.#loops.push(this.#loop());
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#loops);
    this.#loops = [];
  }

  async #loop(): Promise<void> {
    const { client, queueUrl, log } = this.#options;
    while (!this.#abort.signal.aborted) {
      try {
        const received = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(this.#options.batchSize, 10),
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.#abort.signal },
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        const event: SQSEvent = { Records: messages.map((m) => this.#record(m)) };
        let failed: Set<string>;
        try {
          const response = await this.#options.handler(event);
          failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        } catch (error) {
          log.error('worker invocation failed; the whole batch will be retried', {
            queueUrl,
            error: describeError(error),
          });
          continue;
        }
        const succeeded = event.Records.filter((r) => !failed.has(r.messageId));
        if (succeeded.length > 0) {
          await client.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: succeeded.map((r, index) => ({ Id: String(index), ReceiptHandle: r.receiptHandle })),
            }),
          );
        }
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        log.error('queue poll failed', { queueUrl, error: describeError(error) });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  #record(message: {
    MessageId?: string;
    ReceiptHandle?: string;
    Body?: string;
    MD5OfBody?: string;
    Attributes?: Record<string, string>;
  }): SQSRecord {
    const attributes = message.Attributes ?? {};
    return {
      messageId: message.MessageId ?? '',
      receiptHandle: message.ReceiptHandle ?? '',
      body: message.Body ?? '',
      attributes: {
        ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
        SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
        SenderId: attributes.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
        ...(attributes.MessageGroupId !== undefined && { MessageGroupId: attributes.MessageGroupId }),
      },
      messageAttributes: {},
      md5OfBody: message.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.#options.queueArn,
      awsRegion: 'us-east-1',
    };
  }
}
