import { networkPolicySchema } from '../network/policy.ts';
import * as z from '../zod.ts';
import { requestedResourcesSchema, resourcesSchema } from './sandbox-parts.ts';

/**
 * Warm targets as config and the admin API state them (lib/warm/ keeps them). Warm pools (docs/placement.md, "Warm pools"): per pool, targets of ready instances kept for creates
 * that match them. A target names what its instances are (template, resources, egress policy), how many
 * to keep, when (UTC windows; none: always) and how old one may grow before it is replaced.
 */

export const weekdays = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

const clock = z.string().check(z.regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a UTC time as HH:MM'));

/** A UTC window in which a target is kept; `to` before `from` runs past midnight. */
export const warmWindowSchema = z.strictObject({
  days: z.optional(z.array(z.enum(weekdays)).check(z.minLength(1), z.maxLength(7))),
  from: clock,
  to: clock,
});
export type WarmWindow = z.infer<typeof warmWindowSchema>;

export const warmTargetSchema = z.strictObject({
  /** The template its instances run (none: the pool's default), as a create names it. */
  template: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
  /** Its instances' resources, as a create states them (what is left out: the defaults). */
  resources: z.optional(requestedResourcesSchema),
  /** Its instances' egress policy, as a create states it (none: the template's, then the installation's). */
  network: z.optional(networkPolicySchema),
  /** How many ready instances to keep; 0 keeps none (and retires those there are). */
  size: z.int().check(z.gte(0), z.lte(1000)),
  /** An instance older than this is retired and replaced: a claim gets a recent one. */
  maxAgeSeconds: z._default(z.int().check(z.gte(60), z.lte(7 * 86_400)), 3600),
  /** When the target is kept (UTC); outside every window its size is 0. None: always. */
  windows: z.optional(z.array(warmWindowSchema).check(z.minLength(1), z.maxLength(32))),
});
export type WarmTarget = z.infer<typeof warmTargetSchema>;

export const warmTargetsSchema = z.array(warmTargetSchema).check(z.maxLength(16));

/** The installation's bound on what its warm instances may cost together (docs/placement.md). */
export const warmSettingsSchema = z.strictObject({
  /** The most all warm instances may cost per hour at their pools' prices; refill stops there. None: no cap. */
  maxHourlyCost: z.optional(z.number().check(z.gte(0))),
});

/** A warm target as pool details and the trust report show it: what it keeps, and what it has now. */
export const warmTargetStatusSchema = z.object({
  template: z.nullable(z.string()),
  resources: resourcesSchema,
  /** The egress mode of its instances (null: the pool's own network). */
  egress: z.nullable(z.enum(['allow', 'deny', 'allowlist'])),
  /** The size configured, and the size in force now (0 outside its windows). */
  size: z.int(),
  sizeNow: z.int(),
  maxAgeSeconds: z.int(),
  windows: z.optional(z.array(warmWindowSchema)),
  /** Instances ready to be claimed, and being created. */
  ready: z.int(),
  provisioning: z.int(),
  /** What its instances cost the installation per hour now, at the pool's running prices. */
  hourlyCost: z.number(),
  /**
   * What the instances it holds now have cost the installation so far (their creates and their time, at
   * the pool's prices): the installation's, apart from every org's usage and budget.
   */
  costSoFar: z.number(),
});
export type WarmTargetStatus = z.infer<typeof warmTargetStatusSchema>;
