import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError, type Log } from '../lib/log.ts';
import type { WorkOutcome } from '../lib/queue/outcome.ts';
import { type QueueName, type WorkMessage, type WorkQueue, workMessageSchema } from '../lib/queue/port.ts';

export type Work = (message: WorkMessage, receiveCount: number) => Promise<WorkOutcome>;

/** The per-batch counts each worker publishes (dimension `queue`). */
type WorkCount = 'WorkDone' | 'WorkRetried' | 'WorkFailed';

export class RetryLater extends Error {
  override readonly name = 'RetryLater';
}

export class MalformedMessage extends Error {
  override readonly name = 'MalformedMessage';
}

function parseMessage(record: SQSRecord): WorkMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(record.body);
  } catch {
    throw new MalformedMessage(`message ${record.messageId} is not JSON`);
  }
  const parsed = workMessageSchema.safeParse(raw);
  if (!parsed.success) throw new MalformedMessage(`message ${record.messageId} is not a work message`);
  return parsed.data;
}

/**
 * The SQS worker shape both workers share: each record is handled on its own; a retry sets the
 * message's visibility to the backoff delay and reports it in batchItemFailures, so SQS (not the
 * function) holds the wait. A malformed body fails until maxReceiveCount moves it to the DLQ.
 */
export function createWorkQueueHandler(
  queue: QueueName,
  deps: { queue: WorkQueue; log: Log; metrics?: Metrics | undefined },
  work: Work,
) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const processor = new BatchProcessor(EventType.SQS);
    const counts: Record<WorkCount, number> = { WorkDone: 0, WorkRetried: 0, WorkFailed: 0 };
    try {
      return await processRecords(event, processor, counts);
    } finally {
      // Flushed with the invocation by the logMetrics middleware: one EMF record per batch.
      if (deps.metrics !== undefined) {
        deps.metrics.addDimension('queue', queue);
        for (const [name, value] of Object.entries(counts))
          deps.metrics.addMetric(name, MetricUnit.Count, value);
      }
    }
  };

  function processRecords(event: SQSEvent, processor: BatchProcessor, counts: Record<WorkCount, number>) {
    return processPartialResponse(
      event,
      async (record: SQSRecord) => {
        const receiveCount = Number(record.attributes.ApproximateReceiveCount ?? '1');
        let message: WorkMessage;
        try {
          message = parseMessage(record);
        } catch (error) {
          deps.log.error('malformed work message; it will be dead-lettered', {
            queue,
            messageId: record.messageId,
            receiveCount,
            error: describeError(error),
          });
          counts.WorkFailed++;
          throw error;
        }
        const context = { queue, sandboxId: message.sandboxId, orgId: message.orgId, receiveCount };
        let outcome: WorkOutcome;
        try {
          outcome = await work(message, receiveCount);
        } catch (error) {
          deps.log.error('work failed; the message will be retried', {
            ...context,
            error: describeError(error),
          });
          counts.WorkFailed++;
          throw error;
        }
        if (outcome.kind === 'retry') {
          await deps.queue.changeVisibility(queue, record.receiptHandle, outcome.delaySeconds);
          deps.log.info('retry scheduled', { ...context, delaySeconds: outcome.delaySeconds });
          counts.WorkRetried++;
          throw new RetryLater(`retry ${message.sandboxId} in ${outcome.delaySeconds} s`);
        }
        counts.WorkDone++;
      },
      processor,
      { throwOnFullBatchFailure: false },
    );
  }
}
