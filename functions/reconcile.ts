import { z } from 'zod';
import type { ControlPlane } from '../lib/control-plane.ts';
import { type ReconcileReport, reconcile } from '../lib/scheduler/reconcile.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** What the EventBridge Scheduler schedule sends (its target input); anything else is refused. */
export const reconcileEventSchema = z.object({
  source: z.literal('differently.schedule'),
  task: z.literal('reconcile'),
});

export function createReconcileHandler(plane: ControlPlane) {
  return async (event: unknown): Promise<ReconcileReport> => {
    if (!reconcileEventSchema.safeParse(event).success) {
      throw new Error('the reconciler expects {"source":"differently.schedule","task":"reconcile"}');
    }
    return reconcile(plane);
  };
}

const reconcileHandler = once(async () => createReconcileHandler(await controlPlaneFromEnv()));

export const handler = async (event: unknown): Promise<ReconcileReport> => (await reconcileHandler())(event);
