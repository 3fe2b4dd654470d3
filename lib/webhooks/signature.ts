import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Deliveries are signed like Stripe's: `Differently-Signature: t=<unix seconds>,v1=<hex>` where the hex
 * is HMAC-SHA256 over `<t>.<body>` with the endpoint's secret. After a rotation the header carries one
 * `v1` per valid secret, so a receiver holding either accepts it and no delivery is lost while it
 * switches. Receivers reject a `t` older than the replay window.
 */
export const signatureHeader = 'differently-signature';
export const deliveryIdHeader = 'differently-delivery';
export const eventTypeHeader = 'differently-event';
/** How old a delivery's timestamp may be when it is checked (docs/webhooks.md). */
export const replayWindowSeconds = 300;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function hmac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

export function signDelivery(secrets: readonly string[], timestamp: number, body: string): string {
  return [`t=${timestamp}`, ...secrets.map((secret) => `v1=${hmac(secret, timestamp, body)}`)].join(',');
}

/**
 * What a receiver does: true when one `v1` of the header is this secret's HMAC of the body and its
 * timestamp is within the replay window of `now` (seconds).
 */
export function verifyDelivery(
  secret: string,
  header: string | undefined,
  body: string,
  now = Math.floor(Date.now() / 1000),
  toleranceSeconds = replayWindowSeconds,
): boolean {
  if (header === undefined) return false;
  const parts = header.split(',').map((part) => part.trim().split('=', 2) as [string, string | undefined]);
  const timestamp = Number(parts.find(([name]) => name === 't')?.[1]);
  if (!Number.isInteger(timestamp) || Math.abs(now - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(hmac(secret, timestamp, body), 'hex');
  return parts.some(([name, value]) => {
    if (name !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
