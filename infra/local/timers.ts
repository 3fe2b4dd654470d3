import { describeError, type Log } from '../../lib/log.ts';

/**
 * Runs a scheduled handler every `intervalMs`, as EventBridge Scheduler does on AWS, with the same
 * event the schedule sends. A run never overlaps the previous one; a failed run is logged and the
 * next one happens on time.
 */
export class ScheduleTimer {
  readonly #name: string;
  readonly #intervalMs: number;
  readonly #run: () => Promise<unknown>;
  readonly #log: Log;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(name: string, intervalMs: number, run: () => Promise<unknown>, log: Log) {
    this.#name = name;
    this.#intervalMs = intervalMs;
    this.#run = run;
    this.#log = log;
  }

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#running !== undefined) return;
      this.#running = this.#run()
        .then(
          () => undefined,
          (error: unknown) =>
            this.#log.error(`scheduled ${this.#name} failed`, { error: describeError(error) }),
        )
        .finally(() => {
          this.#running = undefined;
        });
    }, this.#intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
