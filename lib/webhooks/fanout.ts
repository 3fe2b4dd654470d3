import type { EventPublisher, LifecycleEvent } from '../events/port.ts';
import type { WorkQueue } from '../queue/port.ts';
import type { WebhookDelivery, WebhookRecord } from '../schemas/webhooks.ts';
import type { WebhookStore } from '../store/webhooks/port.ts';

export interface FanoutDeps {
  store: Pick<WebhookStore, 'listWebhooks'>;
  queue: WorkQueue;
}

/**
 * Lifecycle events to webhook deliveries: for each event, one message on the webhooks queue per
 * endpoint of its org that subscribes to it. It runs as the store's linking hook, after the audit
 * record of the change is committed, so an endpoint hears of every change that happened and of none
 * that did not; a failure throws and the batch is fanned out again (deliveries are at least once, with
 * the same id). The org's endpoints are read fresh for every batch: one registered a moment ago, in
 * any container, gets the next event.
 */
export class WebhookFanout implements EventPublisher {
  #deps: FanoutDeps | undefined;

  /** The store is built with its hook before the queue and itself exist: they are attached after. */
  attach(deps: FanoutDeps): void {
    this.#deps = deps;
  }

  async publish(events: LifecycleEvent[]): Promise<void> {
    const deps = this.#deps;
    if (deps === undefined) return;
    const byOrg = new Map<string, LifecycleEvent[]>();
    for (const event of events)
      byOrg.set(event.detail.orgId, [...(byOrg.get(event.detail.orgId) ?? []), event]);
    for (const [orgId, ofOrg] of byOrg) {
      const webhooks = await deps.store.listWebhooks(orgId);
      if (webhooks.length === 0) continue;
      for (const event of ofOrg) {
        for (const webhook of webhooks.filter((each) => subscribes(each, event))) {
          await deps.queue.send('webhooks', {
            sandboxId: event.detail.sandboxId,
            orgId,
            webhookId: webhook.id,
            delivery: deliveryOf(event),
          });
        }
      }
    }
  }
}

function subscribes(webhook: WebhookRecord, event: LifecycleEvent): boolean {
  return webhook.events === null || webhook.events.includes(typeOf(event));
}

function typeOf(event: LifecycleEvent): string {
  return `sandbox.${event.detail.status}`;
}

/** The body an endpoint receives; its id is the org's and the audit record's, the same on every retry. */
export function deliveryOf(event: LifecycleEvent): WebhookDelivery {
  const { detail } = event;
  return {
    id: `evt_${detail.orgId.slice(4)}_${detail.seq}`,
    type: typeOf(event),
    createdAt: detail.at,
    data: {
      sandboxId: detail.sandboxId,
      orgId: detail.orgId,
      projectId: detail.projectId,
      pool: detail.pool,
      status: detail.status,
      from: detail.from,
      reason: detail.reason,
      cause: detail.cause,
    },
  };
}
