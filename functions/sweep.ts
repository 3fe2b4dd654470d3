import { z } from 'zod';
import type { ControlPlane } from '../lib/control-plane.ts';
import { type SweepReport, sweep } from '../lib/scheduler/sweep.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** What the EventBridge Scheduler schedule sends (its target input); anything else is refused. */
export const scheduleEventSchema = z.object({
  source: z.literal('differently.schedule'),
  task: z.literal('sweep'),
});

export function createSweepHandler(plane: ControlPlane) {
  return async (event: unknown): Promise<SweepReport> => {
    const parsed = scheduleEventSchema.safeParse(event);
    if (!parsed.success)
      throw new Error('the sweep expects {"source":"differently.schedule","task":"sweep"}');
    return sweep(plane);
  };
}

const sweepHandler = once(async () => createSweepHandler(await controlPlaneFromEnv()));

export const handler = async (event: unknown): Promise<SweepReport> => (await sweepHandler())(event);
