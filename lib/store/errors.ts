import { type ApiError, errors } from '../errors.ts';

/** Errors both stores raise the same way (the conformance suite holds them to it). */

/** A change would take the org past one of its quota's limits. */
export function quotaExceeded(over: { field: string; limit: number; used: number; requested: number }) {
  return errors.quotaExceeded(
    `the org's ${over.field} quota of ${over.limit} would be exceeded (${over.used} in use, ${over.requested} requested)`,
    { ...over },
  );
}

/** A slot taken on a pool would pass its concurrency limit. */
export function poolAtLimit(pool: string, limit: number): ApiError {
  return errors.insufficientCapacity(`pool ${pool} is at its concurrency limit of ${limit}`, { pool, limit });
}

/** The org already has its maximum of waiting sandboxes. */
export function waitingExceeded(limit: number): ApiError {
  return errors.quotaExceeded(
    `the org already has ${limit} sandboxes waiting (queued or provisioning), its quota's maxQueued`,
    { field: 'maxQueued', limit },
  );
}

/** The key was used before with another request body. */
export function idempotencyMismatch(key: string) {
  return errors.conflict(`Idempotency-Key ${key} was already used with a different request body`, {
    idempotencyKey: key,
  });
}

/** The org already has its maximum of webhook endpoints. */
export function webhooksExceeded(limit: number): ApiError {
  return errors.quotaExceeded(`the org already has ${limit} webhook endpoints, the most it may have`, {
    field: 'webhooks',
    limit,
  });
}
