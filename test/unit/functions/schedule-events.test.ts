import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  requireScheduleEvent,
  type ScheduledTask,
  scheduleEvent,
} from '../../../functions/schedule-event.ts';

describe('the schedule event contract', () => {
  it.each(['sweep', 'reconcile', 'pool-refresh'] as ScheduledTask[])(
    'events/%s-schedule.json is exactly what the schedule sends, and the function accepts only it',
    (task) => {
      const sample: unknown = JSON.parse(
        readFileSync(new URL(`../../../events/${task}-schedule.json`, import.meta.url), 'utf8'),
      );
      expect(sample).toEqual(scheduleEvent(task));
      expect(() => requireScheduleEvent(sample, task)).not.toThrow();
      const other: ScheduledTask = task === 'sweep' ? 'reconcile' : 'sweep';
      expect(() => requireScheduleEvent(scheduleEvent(other), task)).toThrow(`${task} expects`);
      expect(() => requireScheduleEvent({ task }, task)).toThrow(`${task} expects`);
    },
  );
});
