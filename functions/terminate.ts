import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import { terminateSandbox } from '../lib/scheduler/terminate.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

export function createTerminateHandler(plane: ControlPlane) {
  return createWorkQueueHandler('terminate', plane, (message, receiveCount) =>
    terminateSandbox(plane, message, receiveCount),
  );
}

const terminateHandler = once(async () => createTerminateHandler(await controlPlaneFromEnv()));

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  (await terminateHandler())(event);
