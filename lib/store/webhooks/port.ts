import type { AuditInput } from '../../audit/chain.ts';
import type { WebhookRecord } from '../../schemas/webhooks.ts';

/**
 * The webhooks aggregate: each org's registered endpoints and their secrets.
 */
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
}
