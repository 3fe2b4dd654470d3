import { idPattern } from '../ids.ts';
import * as z from '../zod.ts';
import { sandboxStatuses } from './sandbox-status.ts';

/** What a lifecycle event's delivery says caused it. */
export const eventCauses = ['user', 'ttl', 'idle', 'budget', 'reconciler', 'backend'] as const;
export type EventCause = (typeof eventCauses)[number];

/** The event types an endpoint may subscribe to: `sandbox.<status>`. */
export const webhookEventTypes = sandboxStatuses.map((status) => `sandbox.${status}` as const);

/** At most this many endpoints per org: every lifecycle event is one delivery per endpoint. */
export const maxWebhooksPerOrg = 10;

export const createWebhookSchema = z.strictObject({
  url: z.string().check(z.minLength(1), z.maxLength(2048)),
  /** Absent: every lifecycle event. */
  events: z.optional(
    z.array(z.enum(webhookEventTypes)).check(z.minLength(1), z.maxLength(webhookEventTypes.length)),
  ),
  description: z.optional(z.string().check(z.maxLength(256))),
});

/** A signing secret; after a rotation the previous one signs too, until `validUntil`. */
export const webhookSecretSchema = z.object({ secret: z.string(), validUntil: z.nullable(z.string()) });

export const webhookRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  url: z.string(),
  events: z.nullable(z.array(z.string())),
  description: z.nullable(z.string()),
  /** The current secret first. Never in an audit event, a log or a list answer. */
  secrets: z.array(webhookSecretSchema).check(z.minLength(1)),
  createdAt: z.string(),
});
export type WebhookRecord = z.infer<typeof webhookRecordSchema>;

export const webhookViewSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  url: z.string(),
  events: z.nullable(z.array(z.string())),
  description: z.nullable(z.string()),
  /** Until when the previous secret still signs, after a rotation (null: only one secret). */
  previousSecretValidUntil: z.nullable(z.string()),
  createdAt: z.string(),
});
export type WebhookView = z.infer<typeof webhookViewSchema>;

/** The answers that carry the signing secret: creation and rotation, once. */
export const webhookWithSecretSchema = z.extend(webhookViewSchema, { secret: z.string() });

export const webhookParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('org'), 'an org id (org_...)')),
  webhookId: z.string().check(z.regex(idPattern('webhook'), 'a webhook id (whk_...)')),
});

/** How long a delivery's record (its attempts and outcome) is kept: the webhooks' own history, not the audit. */
export const deliveryRecordDays = 7;

/**
 * One delivery to one endpoint as its org's admin sees it: what it carried, how many attempts it took,
 * what the endpoint last answered (or why it could not be reached), and when it was delivered.
 */
export const webhookDeliveryStatusSchema = z.object({
  /** The delivery's id (the same on every attempt, in the X-Differently-Delivery header). */
  id: z.string(),
  webhookId: z.string(),
  type: z.string(),
  sandboxId: z.string(),
  /** When the event happened (the body's createdAt). */
  createdAt: z.string(),
  attempts: z.int(),
  lastAttemptAt: z.string(),
  /** The HTTP status the endpoint last answered; null when it did not answer. */
  lastStatus: z.nullable(z.int()),
  /** Why the last attempt got no answer (a timeout, a refused connection, a refused address). */
  lastError: z.nullable(z.string()),
  /** Null until an attempt is answered 2xx; after that, later attempts (at least once) change nothing. */
  deliveredAt: z.nullable(z.string()),
});
export type WebhookDeliveryStatus = z.infer<typeof webhookDeliveryStatusSchema>;

/** One attempt at a delivery, as the webhooks worker reports it. */
export interface DeliveryAttempt {
  orgId: string;
  webhookId: string;
  delivery: { id: string; type: string; createdAt: string; sandboxId: string };
  at: string;
  status: number | null;
  error: string | null;
}

/** What a delivery's body holds: one lifecycle event. `id` is the same on every retry (de-duplicate on it). */
export const webhookDeliverySchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: z.string(),
  data: z.object({
    sandboxId: z.string(),
    orgId: z.string(),
    projectId: z.nullable(z.string()),
    pool: z.nullable(z.string()),
    status: z.string(),
    from: z.nullable(z.string()),
    reason: z.nullable(z.string()),
    cause: z.enum(eventCauses),
  }),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;
