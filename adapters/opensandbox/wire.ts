/**
 * OpenSandbox's answers as the adapter reads them (liberally: fields it does not use pass), and its
 * states in the contract's terms. Shapes from the published lifecycle and execd specifications
 * (../shared/reference/providers/specs/).
 */

import type { InstanceState } from '../../lib/adapter/port.ts';
import * as z from '../../lib/zod.ts';
import type { OpenSandboxConfig } from './config.ts';

const stateSchema = z.string();
export const sandboxSchema = z.object({
  id: z.string().check(z.minLength(1)),
  status: z.object({ state: stateSchema, reason: z.optional(z.string()), message: z.optional(z.string()) }),
  metadata: z.nullish(z.record(z.string(), z.string())),
});
export type OpenSandbox = z.infer<typeof sandboxSchema>;
export const listSchema = z.object({
  items: z.array(sandboxSchema),
  pagination: z.object({ page: z.int(), hasNextPage: z.boolean() }),
});
export const endpointSchema = z.object({
  endpoint: z.string().check(z.minLength(1)),
  headers: z.nullish(z.record(z.string(), z.string())),
});
export const snapshotSchema = z.object({
  id: z.string().check(z.minLength(1)),
  status: z.object({ state: z.string(), message: z.optional(z.string()) }),
});
export const fileListSchema = z.array(
  z.object({
    path: z.string(),
    type: z.optional(z.string()),
    size: z.optional(z.number()),
    modified_at: z.optional(z.string()),
  }),
);
export const streamEventSchema = z.object({
  type: z.string(),
  text: z.optional(z.string()),
  error: z.optional(z.object({ ename: z.optional(z.string()), evalue: z.optional(z.string()) })),
});

/** Maps OpenSandbox's state to the contract's; Terminated is reported as gone by the callers. */
export function instanceStateOf(state: string, runtime: OpenSandboxConfig['runtime']): InstanceState {
  switch (state) {
    case 'Running':
      return 'running';
    case 'Paused':
      // On Kubernetes a pause has checkpointed the filesystem and released the pod: that is a stop.
      return runtime === 'kubernetes' ? 'stopped' : 'paused';
    case 'Failed':
      return 'error';
    default:
      // Pending, Pausing, Resuming, Stopping and states added later: in transition.
      return 'pending';
  }
}

/** Stopping is a delete (or TTL expiry) in progress, the only way OpenSandbox stops: already gone to us. */
export function gone(state: string): boolean {
  return state === 'Terminated' || state === 'Stopping';
}
