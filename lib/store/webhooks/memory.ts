import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import type { DeliveryAttempt, WebhookDeliveryStatus, WebhookRecord } from '../../schemas/webhooks.ts';
import { webhooksExceeded } from '../errors.ts';
import { type MemoryState, paginate } from '../memory-state.ts';
import type { Page, PageRequest } from '../page.ts';
import { deliverySortKey, type WebhookStore } from './port.ts';

/** The webhooks aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memoryWebhooks(s: MemoryState): WebhookStore {
  const part: WebhookStore = {
    async createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void> {
      if (!s.orgs.has(webhook.orgId)) throw errors.notFound('org', webhook.orgId);
      // Counted and written in one step (no await between): concurrent registrations cannot both fit.
      const count = [...s.webhooks.values()].filter((each) => each.orgId === webhook.orgId).length;
      if (count >= max) throw webhooksExceeded(max);
      s.webhooks.set(webhook.id, structuredClone(webhook));
      s.append(webhook.orgId, audit);
    },

    async getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined> {
      const webhook = s.webhooks.get(id);
      return webhook?.orgId === orgId ? structuredClone(webhook) : undefined;
    },

    async listWebhooks(orgId: string): Promise<WebhookRecord[]> {
      return [...s.webhooks.values()]
        .filter((webhook) => webhook.orgId === orgId)
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((webhook) => structuredClone(webhook));
    },

    async updateWebhookSecrets(
      current: WebhookRecord,
      secrets: WebhookRecord['secrets'],
      audit: AuditInput,
    ): Promise<void> {
      const stored = s.webhooks.get(current.id);
      if (stored === undefined || stored.orgId !== current.orgId)
        throw errors.notFound('webhook', current.id);
      if (JSON.stringify(stored.secrets) !== JSON.stringify(current.secrets)) {
        throw errors.conflict(`webhook ${current.id} changed since it was read`);
      }
      s.webhooks.set(current.id, { ...stored, secrets: structuredClone(secrets) });
      s.append(current.orgId, audit);
    },

    async deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void> {
      const stored = s.webhooks.get(id);
      if (stored === undefined || stored.orgId !== orgId) throw errors.notFound('webhook', id);
      s.webhooks.delete(id);
      s.append(orgId, audit);
    },

    async recordDeliveryAttempt(attempt: DeliveryAttempt): Promise<void> {
      const { delivery } = attempt;
      const key = `${attempt.orgId}#${deliverySortKey(attempt.webhookId, delivery.createdAt, delivery.id)}`;
      const kept = s.deliveries.get(key);
      const delivered = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
      s.deliveries.set(key, {
        id: delivery.id,
        webhookId: attempt.webhookId,
        type: delivery.type,
        sandboxId: delivery.sandboxId,
        createdAt: delivery.createdAt,
        attempts: (kept?.attempts ?? 0) + 1,
        lastAttemptAt: attempt.at,
        lastStatus: attempt.status,
        lastError: attempt.error,
        deliveredAt: kept?.deliveredAt ?? (delivered ? attempt.at : null),
      });
    },

    async listDeliveries(
      orgId: string,
      webhookId: string,
      page: PageRequest,
    ): Promise<Page<WebhookDeliveryStatus>> {
      const prefix = `${orgId}#${webhookId}#`;
      const mine = [...s.deliveries.entries()]
        .filter(([key]) => key.startsWith(prefix))
        .map(([, record]) => record);
      return paginate(mine, page, (record) => deliverySortKey(record.webhookId, record.createdAt, record.id));
    },
  };
  return part;
}
