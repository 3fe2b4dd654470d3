import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { provisionSandbox } from '../lib/scheduler/provision.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

/** The provision worker: places a queued sandbox on a pool and creates it there. */
export function createProvisionHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return createWorkQueueHandler(
    'provision',
    { queue: plane.queue, log: plane.log, metrics: tools?.metrics },
    (message, receiveCount) => provisionSandbox(plane, message, receiveCount),
  );
}

export const provisionFunction: FunctionDefinition<SQSEvent, SQSBatchResponse> = {
  name: 'provision',
  kind: 'worker',
  core: createProvisionHandler,
};

export const handler = lambdaEntry(provisionFunction);
