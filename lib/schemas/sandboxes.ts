import * as z from 'zod';
import { envSchema, labelsSchema, listQuerySchema } from './common.ts';
import { sandboxOperationSchema } from './sandbox-operations.ts';
import { sandboxStatuses, waitReasons } from './sandbox-status.ts';

/** CPU is reserved in quarters: every sum of quarters is exact in floating point, so quotas never drift. */
export const cpuStep = 0.25;

const resourceFields = {
  cpu: z
    .number()
    .min(cpuStep, { error: `cpu must be at least ${cpuStep}` })
    .max(256)
    .multipleOf(cpuStep, { error: `cpu comes in steps of ${cpuStep}` }),
  memoryMiB: z
    .int()
    .min(128)
    .max(1024 * 1024),
  diskGiB: z
    .int()
    .min(1)
    .max(16 * 1024),
};

export const resourcesSchema = z.strictObject({
  cpu: resourceFields.cpu.default(1),
  memoryMiB: resourceFields.memoryMiB.default(1024),
  diskGiB: resourceFields.diskGiB.default(10),
});
/** Resources as a request states them: what it leaves out comes from its profile, then the defaults. */
export const requestedResourcesSchema = z.strictObject({
  cpu: resourceFields.cpu.optional(),
  memoryMiB: resourceFields.memoryMiB.optional(),
  diskGiB: resourceFields.diskGiB.optional(),
});
export type Resources = z.infer<typeof resourcesSchema>;

export const maxTtlSeconds = 30 * 24 * 3600;
export const defaultTtlSeconds = 3600;

export const placementRequestSchema = z.strictObject({
  allowedPools: z.array(z.string().min(1).max(63)).max(32).optional(),
  regions: z.array(z.string().min(1).max(63)).max(32).optional(),
});

/**
 * After `afterSeconds` without an exec, file or port call, the control plane pauses the sandbox (or
 * stops it: `action`, or where its pool cannot pause); the next exec or file call resumes it first.
 */
export const idlePolicySchema = z.strictObject({
  afterSeconds: z
    .int()
    .min(1)
    .max(7 * 24 * 3600),
  /** Absent: pause where the pool can, stop where it cannot. */
  action: z.enum(['pause', 'stop']).optional(),
});
export type IdlePolicy = z.infer<typeof idlePolicySchema>;

/** A sandbox's idle policy as kept and shown: `idledAt` is set while it is paused or stopped for idleness. */
export const sandboxIdleSchema = z.object({
  afterSeconds: z.int(),
  action: z.enum(['pause', 'stop']).nullable(),
  idledAt: z.string().nullable(),
  /** When its current stretch of running began: the idle checks of an earlier stretch are void. */
  runningSince: z.string().nullable().default(null),
  /**
   * Who pauses or stops it: the backend's own idle timer (Daytona auto-stop, Lambda MicroVMs' idle
   * policy), followed by the control plane, or the control plane's checks.
   */
  enforcedBy: z.enum(['control-plane', 'backend']).default('control-plane'),
});
export type SandboxIdle = z.infer<typeof sandboxIdleSchema>;

export const createSandboxSchema = z.strictObject({
  template: z.string().min(1).max(512).optional(),
  resources: requestedResourcesSchema.optional(),
  env: envSchema.optional(),
  labels: labelsSchema.optional(),
  capabilities: z.array(z.string().min(1).max(64)).max(32).optional(),
  profile: z.string().min(1).max(63).optional(),
  classification: z.string().min(1).max(63).optional(),
  placement: placementRequestSchema.optional(),
  ttlSeconds: z.int().min(60).max(maxTtlSeconds).optional(),
  fromSnapshot: z.string().min(1).max(64).optional(),
  projectId: z.string().min(1).max(64).optional(),
  queueTimeoutSeconds: z
    .int()
    .min(1)
    .max(24 * 3600)
    .optional(),
  /** Overrides the template's and the org's default idle policy; null: none for this sandbox. */
  idle: idlePolicySchema.nullable().optional(),
});
export type CreateSandboxRequest = z.infer<typeof createSandboxSchema>;

export const rejectedPoolSchema = z.object({ pool: z.string(), reason: z.string() });

export const placementDecisionSchema = z.object({
  pool: z.string().nullable(),
  rejected: z.array(rejectedPoolSchema),
  decidedAt: z.string().nullable(),
});

/** The public view of a sandbox. Env values are never echoed; only their names are. */
export const sandboxSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.string().nullable(),
  status: z.enum(sandboxStatuses),
  statusMessage: z.string().nullable(),
  /** Why a queued sandbox waits: pool, quota, capacity or snapshot (statusMessage says it in words). */
  waitingFor: z.enum(waitReasons).nullable(),
  pool: z.string().nullable(),
  template: z.string().nullable(),
  resources: resourcesSchema,
  labels: z.record(z.string(), z.string()),
  capabilities: z.array(z.string()),
  envKeys: z.array(z.string()),
  ttlSeconds: z.int(),
  attempts: z.int(),
  placement: placementDecisionSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
  expiresAt: z.string().nullable(),
  /** The last stop, start, pause or resume and how it ended (null before the first). */
  operation: sandboxOperationSchema.nullable(),
  /** Its idle policy (null: none); `idledAt` while it is paused or stopped for idleness. */
  idle: sandboxIdleSchema.nullable(),
});
export type SandboxView = z.infer<typeof sandboxSchema>;

export const updateSandboxSchema = z
  .strictObject({
    /** Resets expiresAt to now + ttlSeconds (running, stopped and paused sandboxes). */
    ttlSeconds: z.int().min(60).max(maxTtlSeconds).optional(),
    /** Replaces the tenant's labels. */
    labels: labelsSchema.optional(),
  })
  .refine((body) => body.ttlSeconds !== undefined || body.labels !== undefined, {
    message: 'send ttlSeconds, labels, or both',
  });

/** What happened to the provider-side lifetime when the TTL changed. */
export const backstopSchema = z.object({
  extended: z.boolean(),
  note: z.string(),
});

export const updatedSandboxSchema = sandboxSchema.extend({ providerTtl: backstopSchema.optional() });

export const sandboxListQuerySchema = listQuerySchema.extend({
  status: z.enum(sandboxStatuses).optional(),
  projectId: z.string().max(64).optional(),
  /** `key=value`, repeated by comma: `team=a,tier=gold`. */
  label: z.string().max(1024).optional(),
});

export const execRequestSchema = z
  .strictObject({
    command: z
      .string()
      .min(1)
      .max(128 * 1024)
      .optional(),
    args: z
      .array(z.string().max(128 * 1024))
      .min(1)
      .max(1024)
      .optional(),
    env: envSchema.optional(),
    cwd: z.string().min(1).max(4096).optional(),
    stdin: z
      .string()
      .max(1024 * 1024)
      .optional(),
    timeoutSeconds: z.int().min(1).max(7200).optional(),
  })
  .refine((req) => (req.command === undefined) !== (req.args === undefined), {
    message: 'send exactly one of command (run by /bin/sh -c) or args (run directly)',
    path: ['command'],
  });
export type ExecRequest = z.infer<typeof execRequestSchema>;

export const execResultSchema = z.object({
  exitCode: z.int(),
  stdout: z.string(),
  stderr: z.string(),
  durationMs: z.int(),
  truncated: z.boolean(),
  timedOut: z.boolean(),
});
export type ExecResult = z.infer<typeof execResultSchema>;
