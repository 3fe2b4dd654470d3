import type { AuditInput } from '../../audit/chain.ts';
import type { DeliveryAttempt, WebhookDeliveryStatus, WebhookRecord } from '../../schemas/webhooks.ts';
import type { Page, PageRequest } from '../page.ts';

/**
 * The webhooks aggregate: each org's registered endpoints and their secrets, and their deliveries'
 * records.
 */

/**
 * Where a delivery sorts among its endpoint's: newest event first (the event's time, inverted, then its
 * id), so an ascending listing and its cursor read the latest first.
 */
export function deliverySortKey(webhookId: string, createdAt: string, deliveryId: string): string {
  const inverted = String(9_999_999_999_999 - Date.parse(createdAt)).padStart(13, '0');
  return `${webhookId}#${inverted}#${deliveryId}`;
}
export interface WebhookStore {
  /**
   * Registers a webhook endpoint of an org; refused with quota_exceeded past `max` endpoints (counted in
   * the same write), not_found for an unknown org.
   */
  createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void>;

  getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined>;

  /** Every endpoint of the org (at most maxWebhooksPerOrg): what each lifecycle event fans out to. */
  listWebhooks(orgId: string): Promise<WebhookRecord[]>;

  /** Replaces an endpoint's secrets (a rotation), conditional on the ones read: conflict otherwise. */
  updateWebhookSecrets(
    current: WebhookRecord,
    secrets: WebhookRecord['secrets'],
    audit: AuditInput,
  ): Promise<void>;

  deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void>;

  /**
   * Records one attempt at a delivery on its record (made by the first attempt; kept deliveryRecordDays):
   * one more attempt, its answer or error, and the time of the first 2xx answer.
   */
  recordDeliveryAttempt(attempt: DeliveryAttempt): Promise<void>;

  /** An endpoint's deliveries, newest event first. */
  listDeliveries(orgId: string, webhookId: string, page: PageRequest): Promise<Page<WebhookDeliveryStatus>>;
}
