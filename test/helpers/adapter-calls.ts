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

/**
 * The refs an adapter lists for one installation while its provider's list ignores the filter (the fake's
 * `ignoreListFilter` fault): one sandbox is created for `inst_ours` and one for `inst_theirs`, and the
 * answer is what the adapter itself kept, with the ref of ours to compare it to.
 */
export async function listedWhileFilterIgnored(
  adapter: {
    create(request: CreateRequest): Promise<{ ref: string }>;
    list(installation: string): Promise<{ ref: string }[]>;
  },
  fake: { faults: { ignoreListFilter: boolean } },
  request: (overrides: Record<string, unknown>) => CreateRequest,
): Promise<{ ours: string; listed: string[] }> {
  const ours = await adapter.create(request({ installation: 'inst_ours' }));
  await adapter.create(request({ installation: 'inst_theirs' }));
  fake.faults.ignoreListFilter = true;
  try {
    return { ours: ours.ref, listed: (await adapter.list('inst_ours')).map((instance) => instance.ref) };
  } finally {
    fake.faults.ignoreListFilter = false;
  }
}
