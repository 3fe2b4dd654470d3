import * as z from 'zod';
import { idPattern } from '../ids.ts';
import { sandboxStatuses } from './sandbox-status.ts';

/** What a lifecycle event's delivery says caused it. */
export const eventCauses = ['user', 'ttl', 'idle', 'budget', 'reconciler', 'backend'] as const;
export type EventCause = (typeof eventCauses)[number];

/** The event types an endpoint may subscribe to: `sandbox.<status>`. */
export const webhookEventTypes = sandboxStatuses.map((status) => `sandbox.${status}` as const);

/** At most this many endpoints per org: every lifecycle event is one delivery per endpoint. */
export const maxWebhooksPerOrg = 10;

export const createWebhookSchema = z.strictObject({
  url: z.string().min(1).max(2048),
  /** Absent: every lifecycle event. */
  events: z.array(z.enum(webhookEventTypes)).min(1).max(webhookEventTypes.length).optional(),
  description: z.string().max(256).optional(),
});

/** A signing secret; after a rotation the previous one signs too, until `validUntil`. */
export const webhookSecretSchema = z.object({ secret: z.string(), validUntil: z.string().nullable() });

export const webhookRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  url: z.string(),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  /** The current secret first. Never in an audit event, a log or a list answer. */
  secrets: z.array(webhookSecretSchema).min(1),
  createdAt: z.string(),
});
export type WebhookRecord = z.infer<typeof webhookRecordSchema>;

export const webhookViewSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  url: z.string(),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  /** Until when the previous secret still signs, after a rotation (null: only one secret). */
  previousSecretValidUntil: z.string().nullable(),
  createdAt: z.string(),
});
export type WebhookView = z.infer<typeof webhookViewSchema>;

/** The answers that carry the signing secret: creation and rotation, once. */
export const webhookWithSecretSchema = webhookViewSchema.extend({ secret: z.string() });

export const webhookParams = z.strictObject({
  id: z.string().regex(idPattern('org'), 'an org id (org_...)'),
  webhookId: z.string().regex(idPattern('webhook'), 'a webhook id (whk_...)'),
});

/** What a delivery's body holds: one lifecycle event. `id` is the same on every retry (de-duplicate on it). */
export const webhookDeliverySchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: z.string(),
  data: z.object({
    sandboxId: z.string(),
    orgId: z.string(),
    projectId: z.string().nullable(),
    pool: z.string().nullable(),
    status: z.string(),
    from: z.string().nullable(),
    reason: z.string().nullable(),
    cause: z.enum(eventCauses),
  }),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;
