import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError, type Log } from '../../lib/log.ts';

export interface PollerOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: (event: SQSEvent) => Promise<SQSBatchResponse>;
  log: Log;
  /** Messages per invocation, as the event source mapping's BatchSize. */
  batchSize?: number;
  /** Parallel invocations, as the mapping's MaximumConcurrency. */
  concurrency?: number;
  /**
   * How many received messages the poller holds to choose batches from. SQS fair queues (standard queues
   * with a MessageGroupId) keep one group's backlog from delaying the others; the embedded server does
   * not, so the poller does it: it receives the visible backlog up to this many messages and builds each
   * batch round-robin across message groups.
   */
  holdCapacity?: number;
  /**
   * The fairness key of a message. Default: its MessageGroupId. The embedded server does not return
   * MessageGroupId for standard queues, so the runtime passes one that reads the work message's org.
   */
  groupOf?: (message: Message) => string;
}

/**
 * Behaves like a Lambda SQS event source mapping over an SQS fair queue: receives messages, invokes the
 * handler with batches, deletes the records that succeeded, and leaves the ones reported in
 * batchItemFailures (or a whole batch whose invocation threw) to reappear when their visibility timeout
 * ends, including a timeout the handler changed for backoff.
 */
export class SqsPoller {
  readonly #options: Required<PollerOptions>;
  readonly #abort = new AbortController();
  /** Received, not yet dispatched messages, by message group, in arrival order. */
  readonly #held = new Map<string, Message[]>();
  #heldCount = 0;
  #filling: Promise<void> | undefined;
  #loops: Promise<void>[] = [];

  constructor(options: PollerOptions) {
    this.#options = {
      batchSize: 10,
      concurrency: 2,
      holdCapacity: 1000,
      groupOf: (message) => message.Attributes?.MessageGroupId ?? '',
      ...options,
    };
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
        await this.#fill();
        const batch = this.#nextBatch();
        if (batch.length === 0) continue;
        const event: SQSEvent = { Records: batch.map((m) => this.#record(m)) };
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

  /** Receives what is visible, up to the hold capacity; waits (long poll) only when nothing is held. */
  async #fill(): Promise<void> {
    if (this.#filling !== undefined) {
      await this.#filling;
      return;
    }
    this.#filling = (async () => {
      const { client, queueUrl, holdCapacity } = this.#options;
      while (this.#heldCount < holdCapacity && !this.#abort.signal.aborted) {
        const received = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: this.#heldCount === 0 ? 1 : 0,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.#abort.signal },
        );
        const messages = received.Messages ?? [];
        for (const message of messages) {
          const group = this.#options.groupOf(message);
          this.#held.set(group, [...(this.#held.get(group) ?? []), message]);
          this.#heldCount++;
        }
        if (messages.length < 10) break;
      }
    })().finally(() => {
      this.#filling = undefined;
    });
    await this.#filling;
  }

  /** One message from each group in turn, until the batch is full: no group waits behind another's backlog. */
  #nextBatch(): Message[] {
    const batch: Message[] = [];
    while (batch.length < this.#options.batchSize && this.#heldCount > 0) {
      for (const [group, messages] of this.#held) {
        const message = messages.shift();
        if (message !== undefined) {
          batch.push(message);
          this.#heldCount--;
        }
        if (messages.length === 0) this.#held.delete(group);
        else {
          // Move the group to the end so the next pick starts with the next group.
          this.#held.delete(group);
          this.#held.set(group, messages);
        }
        break;
      }
    }
    return batch;
  }

  #record(message: Message): SQSRecord {
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
