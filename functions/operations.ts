import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import { runOperation } from '../lib/scheduler/operations.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

/** The operations worker: finishes stops, starts, pauses, resumes and snapshots the API recorded. */
export function createOperationsHandler(plane: ControlPlane) {
  return createWorkQueueHandler('operations', plane, (message, receiveCount) =>
    runOperation(plane, message, receiveCount),
  );
}

const operationsHandler = once(async () => createOperationsHandler(await controlPlaneFromEnv()));

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  (await operationsHandler())(event);
