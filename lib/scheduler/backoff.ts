import type { Config } from '../config.ts';
import type { QueueName } from '../queue/port.ts';
import { deliveryMaxReceives } from '../webhooks/deliver.ts';

/** The seeds' provisioning backoff: 2 s x 2^min(attempts, 5), so 4, 8, ... capped at 64 s. */
export function provisionBackoffSeconds(attempts: number): number {
  return 2 * 2 ** Math.min(Math.max(attempts, 0), 5);
}

/** The longest a waiting sandbox sleeps between looks. */
export const maxWaitSeconds = 60;

/**
 * A sandbox waiting for capacity or for its org's quota looks again after 2 s (the seeds' capacity
 * retry), then 4, 6, ... growing with each receive, capped at a minute: waiting neither spins nor ends
 * in the DLQ while it is legitimate (see queueSettings).
 */
export function waitSeconds(receiveCount: number): number {
  return Math.min(2 * Math.max(receiveCount, 1), maxWaitSeconds);
}

/** Terminations retry until they succeed; the delay grows and is capped at five minutes. */
export function terminateBackoffSeconds(receiveCount: number): number {
  return Math.min(5 * 2 ** Math.min(Math.max(receiveCount - 1, 0), 6), 300);
}

export interface QueueSettings {
  /** The worker function's timeout: the adapter call's own limit plus time for the store writes. */
  workerTimeoutSeconds: number;
  /** Six times the worker timeout (AWS's advice for SQS event sources), so a running batch is not redelivered. */
  visibilityTimeoutSeconds: number;
  maxReceiveCount: number;
}

/**
 * The queues' settings, shared by the CDK app and the local runtime. Every retry is a receive, so
 * maxReceiveCount is chosen with the backoff: a provision message waits at most 60 s between receives,
 * so 1,000 receives are more than 16 hours of waiting (a queueTimeoutSeconds ends a wait sooner); a
 * terminate message retries at most every 5 minutes, so 100 receives are more than 8 hours of failing
 * Deletes before the sweep finds it in the DLQ and sends it again (a termination always finishes).
 */
export function queueSettings(config: Config): Record<QueueName, QueueSettings> {
  const settings = (adapterSeconds: number, maxReceiveCount: number): QueueSettings => {
    const workerTimeoutSeconds = adapterSeconds + 30;
    return { workerTimeoutSeconds, visibilityTimeoutSeconds: workerTimeoutSeconds * 6, maxReceiveCount };
  };
  return {
    provision: settings(config.scheduler.provisionTimeoutSeconds, 1000),
    terminate: settings(config.scheduler.terminateTimeoutSeconds, 100),
    // An operation retries only while its backend is unavailable (a few times); past that it settles.
    operations: settings(config.scheduler.operationTimeoutSeconds, 10),
    // A delivery is one POST with a 10 s timeout; 12 receives with its backoff are about an hour.
    webhooks: settings(10, deliveryMaxReceives),
  };
}
