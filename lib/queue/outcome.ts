/** What a worker does with a message once the record has been handled. */
export type WorkOutcome = { kind: 'done' } | { kind: 'retry'; delaySeconds: number };

export const done: WorkOutcome = { kind: 'done' };
export const retryAfter = (delaySeconds: number): WorkOutcome => ({ kind: 'retry', delaySeconds });
