import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { terminateSandbox } from '../lib/scheduler/terminate.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

/** The terminate worker: deletes a sandbox's instance on its pool until it is gone. */
export function createTerminateHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return createWorkQueueHandler(
    'terminate',
    { queue: plane.queue, log: plane.log, metrics: tools?.metrics },
    (message, receiveCount) => terminateSandbox(plane, message, receiveCount),
  );
}

export const terminateFunction: FunctionDefinition<SQSEvent, SQSBatchResponse> = {
  name: 'terminate',
  kind: 'worker',
  core: createTerminateHandler,
};

export const handler = lambdaEntry(terminateFunction);
