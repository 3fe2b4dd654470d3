import { errors } from '../errors.ts';
import { newId } from '../ids.ts';
import {
  type createWebhookSchema,
  maxWebhooksPerOrg,
  type WebhookDeliveryStatus,
  type WebhookRecord,
  type WebhookView,
} from '../schemas/webhooks.ts';
import type { Page, PageRequest } from '../store/page.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import type { WebhookStore } from '../store/webhooks/port.ts';
import type * as z from '../zod.ts';
import { checkWebhookUrl } from './destinations.ts';
import { newWebhookSecret } from './signature.ts';

/** How long the previous secret keeps signing after a rotation: receivers switch within it. */
export const rotationGraceSeconds = 24 * 3600;

export function webhookView(record: WebhookRecord, now: Date): WebhookView {
  const previous = record.secrets[1];
  return {
    id: record.id,
    orgId: record.orgId,
    url: record.url,
    events: record.events,
    description: record.description,
    previousSecretValidUntil:
      previous?.validUntil !== undefined &&
      previous.validUntil !== null &&
      previous.validUntil > now.toISOString()
        ? previous.validUntil
        : null,
    createdAt: record.createdAt,
  };
}

/** The org's webhook endpoints (admin API): registered with a URL the destination rules allow. */
export class Webhooks {
  readonly #store: TenancyStore & WebhookStore;
  readonly #devMode: boolean;
  readonly #now: () => Date;

  constructor(deps: {
    store: TenancyStore & WebhookStore;
    config: { devMode: boolean };
    now?: (() => Date) | undefined;
  }) {
    this.#store = deps.store;
    this.#devMode = deps.config.devMode;
    this.#now = deps.now ?? (() => new Date());
  }

  async create(
    orgId: string,
    input: z.infer<typeof createWebhookSchema>,
    actor: string,
  ): Promise<WebhookView & { secret: string }> {
    const url = checkWebhookUrl(input.url, this.#devMode);
    const now = this.#now();
    const secret = newWebhookSecret();
    const record: WebhookRecord = {
      id: newId('webhook'),
      orgId,
      url: url.href,
      events: input.events ?? null,
      description: input.description ?? null,
      secrets: [{ secret, validUntil: null }],
      createdAt: now.toISOString(),
    };
    // The audit names where deliveries go (the origin: a path or query may hold a receiver's token).
    await this.#store.createWebhook(record, maxWebhooksPerOrg, {
      actor,
      action: 'webhook.created',
      target: record.id,
      details: { origin: url.origin, events: record.events },
    });
    return { ...webhookView(record, now), secret };
  }

  async list(orgId: string): Promise<{ items: WebhookView[]; nextCursor: null }> {
    if ((await this.#store.getOrg(orgId)) === undefined) throw errors.notFound('org', orgId);
    const now = this.#now();
    return {
      items: (await this.#store.listWebhooks(orgId)).map((record) => webhookView(record, now)),
      nextCursor: null,
    };
  }

  /** An endpoint's deliveries, newest event first (kept deliveryRecordDays). */
  async deliveries(orgId: string, id: string, page: PageRequest): Promise<Page<WebhookDeliveryStatus>> {
    if ((await this.#store.getWebhook(orgId, id)) === undefined) throw errors.notFound('webhook', id);
    return this.#store.listDeliveries(orgId, id, page);
  }

  async delete(orgId: string, id: string, actor: string): Promise<{ id: string; deleted: true }> {
    await this.#store.deleteWebhook(orgId, id, { actor, action: 'webhook.deleted', target: id, details: {} });
    return { id, deleted: true };
  }

  /**
   * A new secret; the previous one keeps signing deliveries (both signatures in the header) for
   * rotationGraceSeconds, so a receiver that switches meanwhile loses nothing. Older ones are dropped.
   */
  async rotateSecret(orgId: string, id: string, actor: string): Promise<WebhookView & { secret: string }> {
    const current = await this.#store.getWebhook(orgId, id);
    if (current === undefined) throw errors.notFound('webhook', id);
    const now = this.#now();
    const secret = newWebhookSecret();
    const [previous] = current.secrets;
    const validUntil = new Date(now.getTime() + rotationGraceSeconds * 1000).toISOString();
    const secrets = [
      { secret, validUntil: null },
      ...(previous === undefined ? [] : [{ secret: previous.secret, validUntil }]),
    ];
    await this.#store.updateWebhookSecrets(current, secrets, {
      actor,
      action: 'webhook.secret-rotated',
      target: id,
      details: { previousValidUntil: validUntil },
    });
    return { ...webhookView({ ...current, secrets }, now), secret };
  }
}
