import * as z from '../zod.ts';

/**
 * The parts of a sandbox that its stored record (lib/store/records.ts) and its API shapes
 * (lib/schemas/sandboxes.ts, sandbox-operations.ts) share: resources, the idle policy and state, the
 * placement decision, the last lifecycle operation. Apart from the API's request and response shapes, so
 * that a worker, which reads records and never answers a request, does not build those at its cold start.
 */

/** CPU is reserved in quarters: every sum of quarters is exact in floating point, so quotas never drift. */
export const cpuStep = 0.25;

/** An amount of CPU named `field`: whole quarters, at least one, at most `max`. */
export function cpuQuarters(field: string, max: number) {
  return z
    .number()
    .check(
      z.gte(cpuStep, { error: `${field} must be at least ${cpuStep}` }),
      z.lte(max),
      z.multipleOf(cpuStep, { error: `${field} comes in steps of ${cpuStep}` }),
    );
}

const resourceFields = {
  cpu: cpuQuarters('cpu', 256),
  memoryMiB: z.int().check(z.gte(128), z.lte(1024 * 1024)),
  diskGiB: z.int().check(z.gte(1), z.lte(16 * 1024)),
};

export const resourcesSchema = z.strictObject({
  cpu: z._default(resourceFields.cpu, 1),
  memoryMiB: z._default(resourceFields.memoryMiB, 1024),
  diskGiB: z._default(resourceFields.diskGiB, 10),
});
/** Resources as a request states them: what it leaves out comes from its profile, then the defaults. */
export const requestedResourcesSchema = z.strictObject({
  cpu: z.optional(resourceFields.cpu),
  memoryMiB: z.optional(resourceFields.memoryMiB),
  diskGiB: z.optional(resourceFields.diskGiB),
});
export type Resources = z.infer<typeof resourcesSchema>;

/**
 * After `afterSeconds` without an exec, file or port call, the control plane pauses the sandbox (or
 * stops it: `action`, or where its pool cannot pause); the next exec or file call resumes it first.
 */
export const idlePolicySchema = z.strictObject({
  afterSeconds: z.int().check(z.gte(1), z.lte(7 * 24 * 3600)),
  /** Absent: pause where the pool can, stop where it cannot. */
  action: z.optional(z.enum(['pause', 'stop'])),
});
export type IdlePolicy = z.infer<typeof idlePolicySchema>;

/** A sandbox's idle policy as kept and shown: `idledAt` is set while it is paused or stopped for idleness. */
export const sandboxIdleSchema = z.object({
  afterSeconds: z.int(),
  action: z.nullable(z.enum(['pause', 'stop'])),
  idledAt: z.nullable(z.string()),
  /** When its current stretch of running began: the idle checks of an earlier stretch are void. */
  runningSince: z._default(z.nullable(z.string()), null),
  /**
   * Who pauses or stops it: the backend's own idle timer (Daytona auto-stop, Lambda MicroVMs' idle
   * policy), followed by the control plane, or the control plane's checks.
   */
  enforcedBy: z._default(z.enum(['control-plane', 'backend']), 'control-plane'),
});
export type SandboxIdle = z.infer<typeof sandboxIdleSchema>;

export const rejectedPoolSchema = z.object({ pool: z.string(), reason: z.string() });

export const placementDecisionSchema = z.object({
  pool: z.nullable(z.string()),
  rejected: z.array(rejectedPoolSchema),
  decidedAt: z.nullable(z.string()),
});

/** creating (the operations worker takes it on the backend), then ready, or failed with the reason. */
export const snapshotStatuses = ['creating', 'ready', 'failed'] as const;

/** The lifecycle calls a tenant makes; the worker finishes them when the backend needs longer. */
export const lifecycleActions = ['stop', 'start', 'pause', 'resume'] as const;
export type LifecycleAction = (typeof lifecycleActions)[number];

/**
 * The last lifecycle operation asked of a sandbox and how it ended: pending while the record is in a
 * transitional status, then succeeded, or failed with the backend's code and message (the record is
 * back in the status it had).
 */
export const sandboxOperationSchema = z.object({
  action: z.enum(lifecycleActions),
  state: z.enum(['pending', 'succeeded', 'failed']),
  requestedAt: z.string(),
  settledAt: z.nullable(z.string()),
  error: z.nullable(z.object({ code: z.string(), message: z.string() })),
  /** Who asked: a caller (`user`), or the idle policy (`idle`). Older records have none: a caller. */
  cause: z._default(z.enum(['user', 'idle']), 'user'),
});
export type SandboxOperation = z.infer<typeof sandboxOperationSchema>;

/** How a sandbox came warm (docs/placement.md, "Warm pools"): the instance it claimed, made ahead of it. */
export const sandboxWarmSchema = z.object({
  /** When its create claimed the instance. */
  claimedAt: z.string(),
  /** When the instance became ready, before any create named it. */
  readyAt: z.string(),
});
export type SandboxWarm = z.infer<typeof sandboxWarmSchema>;

/**
 * What a sandbox has cost and holds of its budgets, in the pools' currency (docs/tenancy.md, "Budgets").
 * `soFar` counts up to its last change; while it is billed, `accruing` says since when and at what rate,
 * so a reader adds `perSecond` x the seconds since `since` for the cost now.
 */
export const sandboxCostSchema = z.object({
  /** The month (UTC, YYYY-MM) whose budget holds the reservation and receives the spend. */
  month: z.string(),
  soFar: z.number(),
  /** What it holds of its budgets: the most it can cost over its TTL (again after a TTL change); zero once settled. */
  reserved: z.number(),
  accruing: z.nullable(z.object({ since: z.string(), perSecond: z.number() })),
  /** When it was settled (terminated or failed): `soFar` is then what it was charged. */
  settledAt: z.nullable(z.string()),
});
export type SandboxCost = z.infer<typeof sandboxCostSchema>;
