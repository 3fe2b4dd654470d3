import type { Feature } from '../adapter/features.ts';
import type { LifecycleAction } from '../schemas/sandbox-parts.ts';
import {
  type SandboxStatus,
  settledWithInstance,
  type TransitionalStatus,
} from '../schemas/sandbox-status.ts';

/**
 * Each lifecycle call: the status it starts from, the transitional status the record takes before the
 * backend is called, and the status it ends in.
 */
export const lifecycleMoves: Record<
  LifecycleAction,
  { from: SandboxStatus; pending: TransitionalStatus; to: SandboxStatus; feature: Feature }
> = {
  stop: { from: 'running', pending: 'stopping', to: 'stopped', feature: 'lifecycle.stop-start' },
  start: { from: 'stopped', pending: 'starting', to: 'running', feature: 'lifecycle.stop-start' },
  pause: { from: 'running', pending: 'pausing', to: 'paused', feature: 'lifecycle.pause-resume' },
  resume: { from: 'paused', pending: 'resuming', to: 'running', feature: 'lifecycle.pause-resume' },
};

/** The lifecycle call a transitional status belongs to. */
export function actionOf(status: SandboxStatus): LifecycleAction | undefined {
  return (Object.keys(lifecycleMoves) as LifecycleAction[]).find(
    (action) => lifecycleMoves[action].pending === status,
  );
}

/** Sandbox statuses a snapshot may be taken in. */
export const snapshotableStatuses: readonly SandboxStatus[] = settledWithInstance;
