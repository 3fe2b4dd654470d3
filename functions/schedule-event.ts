import * as z from '../lib/zod.ts';

/** The scheduled tasks, each its own function, run every minute by EventBridge Scheduler. */
export type ScheduledTask = 'sweep' | 'reconcile' | 'pool-refresh';

/** What a schedule sends its function (the schedule's target input, and events/<task>-schedule.json). */
export function scheduleEvent(task: ScheduledTask) {
  return { source: 'differently.schedule', task } as const;
}

const scheduleEventSchema = z.object({ source: z.literal('differently.schedule'), task: z.string() });

/** Refuses any event other than the task's schedule event, naming the one expected. */
export function requireScheduleEvent(event: unknown, task: ScheduledTask): void {
  const parsed = scheduleEventSchema.safeParse(event);
  if (!parsed.success || parsed.data.task !== task)
    throw new Error(`${task} expects ${JSON.stringify(scheduleEvent(task))}`);
}
