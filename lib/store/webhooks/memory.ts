import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import type { WebhookRecord } from '../../schemas/webhooks.ts';
import { webhooksExceeded } from '../errors.ts';
import type { MemoryState } from '../memory-state.ts';
import type { WebhookStore } from './port.ts';

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
  };
  return part;
}
