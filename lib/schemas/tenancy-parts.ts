import * as z from '../zod.ts';
import { cpuQuarters } from './sandbox-parts.ts';

/**
 * The parts of an org and a key that their stored records (lib/store/records.ts) and their API shapes
 * (lib/schemas/tenancy.ts) share: the quota, the key roles. Apart from the API's shapes, so that a worker
 * does not build those at its cold start.
 */

const quotaFields = {
  // In the sandboxes' own steps: every quota is then a sum of quarters, exact in floating point and in
  // DynamoDB's numbers (which refuse magnitudes below 1e-130, so a tiny one was a 500, not a 400).
  maxCPU: cpuQuarters('maxCPU', 1_000_000),
  maxMemoryMiB: z.int().check(z.positive()),
  maxDiskGiB: z.int().check(z.positive()),
  maxSandboxes: z.int().check(z.positive()),
  maxSnapshots: z.int().check(z.gte(0)),
  /** Sandboxes an org may have waiting (queued or provisioning) at once; more are refused with 429. */
  maxQueued: z.int().check(z.gte(1), z.lte(100_000)),
};

export const quotaSchema = z.strictObject({
  maxCPU: z._default(quotaFields.maxCPU, 64),
  maxMemoryMiB: z._default(quotaFields.maxMemoryMiB, 128 * 1024),
  maxDiskGiB: z._default(quotaFields.maxDiskGiB, 2048),
  maxSandboxes: z._default(quotaFields.maxSandboxes, 100),
  maxSnapshots: z._default(quotaFields.maxSnapshots, 100),
  maxQueued: z._default(quotaFields.maxQueued, 100),
});
/** Some of the limits, none defaulted: what a quota change names and nothing else. */
export const quotaChangeSchema = z.strictObject({
  maxCPU: z.optional(quotaFields.maxCPU),
  maxMemoryMiB: z.optional(quotaFields.maxMemoryMiB),
  maxDiskGiB: z.optional(quotaFields.maxDiskGiB),
  maxSandboxes: z.optional(quotaFields.maxSandboxes),
  maxSnapshots: z.optional(quotaFields.maxSnapshots),
  maxQueued: z.optional(quotaFields.maxQueued),
});
export type Quota = z.infer<typeof quotaSchema>;

export const keyRoles = ['admin', 'member'] as const;
