import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { deliverWebhook } from '../lib/webhooks/deliver.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

/** The webhooks worker: signs and sends each lifecycle event to the endpoints of its org. */
export function createWebhooksHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return createWorkQueueHandler(
    'webhooks',
    { queue: plane.queue, log: plane.log, metrics: tools?.metrics },
    (message, receiveCount) =>
      deliverWebhook(
        {
          store: plane.store,
          log: plane.log,
          devMode: plane.config.devMode,
          ...(plane.now && { now: plane.now }),
        },
        message,
        receiveCount,
      ),
  );
}

export const webhooksFunction: FunctionDefinition<SQSEvent, SQSBatchResponse> = {
  name: 'webhooks',
  kind: 'worker',
  core: createWebhooksHandler,
};

export const handler = lambdaEntry(webhooksFunction);
