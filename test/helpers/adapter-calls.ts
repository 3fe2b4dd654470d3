import type { CreateRequest } from '../../lib/adapter/port.ts';
import { newId } from '../../lib/ids.ts';

/** A CreateRequest with a fresh sandbox id; `base` sets a suite's defaults, `overrides` one call's. */
export function createRequest(
  base: Partial<CreateRequest>,
  overrides: Record<string, unknown> = {},
): CreateRequest {
  return {
    id: newId('sandbox'),
    installation: 'inst_test',
    resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
    env: {},
    labels: {},
    ttlSeconds: 600,
    ...base,
    ...overrides,
  };
}

/** The error a call fails with (its code, message and details); a call that succeeds fails the test. */
export async function failureOf(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: { code: string; message: string; details: Record<string, unknown> }) => error,
  );
}
