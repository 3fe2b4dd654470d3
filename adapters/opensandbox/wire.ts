/**
 * OpenSandbox's answers as the adapter reads them (liberally: fields it does not use pass), and its
 * states in the contract's terms. Shapes from the published lifecycle and execd specifications
 * (../shared/reference/providers/specs/).
 */

import * as z from 'zod';
import type { InstanceState } from '../../lib/adapter/port.ts';
import type { OpenSandboxConfig } from './config.ts';

const stateSchema = z.string();
export const sandboxSchema = z.object({
  id: z.string().min(1),
  status: z.object({ state: stateSchema, reason: z.string().optional(), message: z.string().optional() }),
  metadata: z.record(z.string(), z.string()).nullish(),
});
export type OpenSandbox = z.infer<typeof sandboxSchema>;
export const listSchema = z.object({
  items: z.array(sandboxSchema),
  pagination: z.object({ page: z.int(), hasNextPage: z.boolean() }),
});
export const endpointSchema = z.object({
  endpoint: z.string().min(1),
  headers: z.record(z.string(), z.string()).nullish(),
});
export const snapshotSchema = z.object({
  id: z.string().min(1),
  status: z.object({ state: z.string(), message: z.string().optional() }),
});
export const fileListSchema = z.array(
  z.object({
    path: z.string(),
    type: z.string().optional(),
    size: z.number().optional(),
    modified_at: z.string().optional(),
  }),
);
export const streamEventSchema = z.object({
  type: z.string(),
  text: z.string().optional(),
  error: z.object({ ename: z.string().optional(), evalue: z.string().optional() }).optional(),
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
