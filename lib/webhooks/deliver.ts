import { describeError, type Log } from '../log.ts';
import { done, retryAfter, type WorkOutcome } from '../queue/outcome.ts';
import type { WorkMessage } from '../queue/port.ts';
import type { WebhookDelivery } from '../schemas/webhooks.ts';
import type { WebhookStore } from '../store/webhooks/port.ts';
import { type DeliverySender, postDelivery } from './sender.ts';
import { deliveryIdHeader, eventTypeHeader, signatureHeader, signDelivery } from './signature.ts';

export interface DeliverDeps {
  store: WebhookStore;
  log: Log;
  devMode: boolean;
  now?: () => Date;
  send?: DeliverySender;
}

/** How long an endpoint has to answer a delivery. */
export const deliveryTimeoutMs = 10_000;
/** Receives before a delivery goes to the webhooks dead-letter queue (about an hour of retries). */
export const deliveryMaxReceives = 12;

/** 2, 4, 8 ... seconds between attempts, at most 15 minutes (SQS's longest delay). */
export function deliveryBackoffSeconds(receiveCount: number): number {
  return Math.min(900, 2 ** Math.max(1, receiveCount));
}

/**
 * The webhooks worker: one delivery per message, signed at the moment of sending with every secret the
 * endpoint holds now. A 2xx answer is done; anything else (an error status, a timeout, a refused address)
 * is tried again with backoff until the queue's maxReceiveCount moves it to the dead-letter queue. An
 * endpoint deleted meanwhile is acknowledged. At least once: receivers de-duplicate on the delivery id.
 */
export async function deliverWebhook(
  deps: DeliverDeps,
  message: WorkMessage,
  receiveCount = 1,
): Promise<WorkOutcome> {
  const { webhookId, delivery } = message;
  if (webhookId === undefined || delivery === undefined) return done;
  const webhook = await deps.store.getWebhook(message.orgId, webhookId);
  if (webhook === undefined) return done;
  const now = deps.now?.() ?? new Date();
  const secrets = webhook.secrets
    .filter((entry) => entry.validUntil === null || entry.validUntil > now.toISOString())
    .map((entry) => entry.secret);
  const body = JSON.stringify(delivery satisfies WebhookDelivery);
  const url = new URL(webhook.url);
  const context = { webhookId, origin: url.origin, deliveryId: delivery.id, receiveCount };
  let status: number | null = null;
  let failure: string | null = null;
  try {
    status = await (deps.send ?? postDelivery)(
      url,
      {
        'content-type': 'application/json',
        'user-agent': 'differently-webhooks/1',
        [signatureHeader]: signDelivery(secrets, Math.floor(now.getTime() / 1000), body),
        [deliveryIdHeader]: delivery.id,
        [eventTypeHeader]: delivery.type,
      },
      body,
      { devMode: deps.devMode, timeoutMs: deliveryTimeoutMs },
    );
    if (status < 200 || status >= 300)
      deps.log.warn('webhook delivery refused by its endpoint; retrying', { ...context, status });
  } catch (error) {
    failure = failureReason(error);
    deps.log.warn('webhook delivery failed; retrying', { ...context, error: describeError(error) });
  }
  // The delivery's record, for its org's admin (GET .../webhooks/{id}/deliveries): a failure to write it
  // neither fails nor repeats the delivery.
  await deps.store
    .recordDeliveryAttempt({
      orgId: message.orgId,
      webhookId,
      delivery: {
        id: delivery.id,
        type: delivery.type,
        createdAt: delivery.createdAt,
        sandboxId: delivery.data.sandboxId,
      },
      at: now.toISOString(),
      status,
      error: failure,
    })
    .catch((error: unknown) =>
      deps.log.warn('could not record a webhook delivery attempt', {
        ...context,
        error: describeError(error),
      }),
    );
  if (status !== null && status >= 200 && status < 300) return done;
  return retryAfter(deliveryBackoffSeconds(receiveCount));
}

/**
 * Why an attempt got no answer, in words that carry nothing of the endpoint's URL or of what its server
 * said: a timeout, a connection error's code, or the address check's refusal.
 */
export function failureReason(error: unknown): string {
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  if (name === 'TimeoutError' || name === 'AbortError')
    return `no answer within ${deliveryTimeoutMs / 1000} s`;
  if (typeof message === 'string' && message.startsWith('the name resol')) return message;
  if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return `could not connect (${code})`;
  return 'the request failed';
}
