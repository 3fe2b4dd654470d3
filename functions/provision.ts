import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import { provisionSandbox } from '../lib/scheduler/provision.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';
import { createWorkQueueHandler } from './work-queue-handler.ts';

export function createProvisionHandler(plane: ControlPlane) {
  return createWorkQueueHandler('provision', plane, (message, receiveCount) =>
    provisionSandbox(plane, message, receiveCount),
  );
}

const provisionHandler = once(async () => createProvisionHandler(await controlPlaneFromEnv()));

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  (await provisionHandler())(event);
