/** The seeds' provisioning backoff: 2 s x 2^min(attempts, 5), so 2, 4, 8, ... capped at 64 s. */
export function provisionBackoffSeconds(attempts: number): number {
  return 2 * 2 ** Math.min(Math.max(attempts, 0), 5);
}

/** insufficient_capacity: try again shortly without counting an attempt. */
export const capacityRetrySeconds = 2;

/** Terminations retry until they succeed; the delay grows and is capped at five minutes. */
export function terminateBackoffSeconds(receiveCount: number): number {
  return Math.min(5 * 2 ** Math.min(Math.max(receiveCount - 1, 0), 6), 300);
}

/** A sandbox waiting for its org's quota looks again after a delay that grows with each wait, capped. */
export function quotaWaitSeconds(receiveCount: number): number {
  return Math.min(2 * Math.max(receiveCount, 1), 30);
}
