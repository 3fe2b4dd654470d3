import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { runOperation } from '../lib/scheduler/operations-worker.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

/** The operations worker: finishes stops, starts, pauses, resumes and snapshots the API recorded. */
export function createOperationsHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return createWorkQueueHandler(
    'operations',
    { queue: plane.queue, log: plane.log, metrics: tools?.metrics },
    (message, receiveCount) => runOperation(plane, message, receiveCount),
  );
}

export const operationsFunction: FunctionDefinition<SQSEvent, SQSBatchResponse> = {
  name: 'operations',
  kind: 'worker',
  core: createOperationsHandler,
};

export const handler = lambdaEntry(operationsFunction);
