/** A receiver checks a delivery with this: its secret, the signature header, the raw body (Node only). */
export { verifyDelivery as verifyWebhookSignature } from '../lib/webhooks/signature.ts';
export * from './client.ts';
export * from './errors.ts';
