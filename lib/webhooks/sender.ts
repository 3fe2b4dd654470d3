import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { allowedAddresses } from './destinations.ts';

export interface DeliveryOptions {
  devMode: boolean;
  timeoutMs: number;
  /** Name resolution (tests resolve names of their own). */
  resolve?: (host: string) => Promise<{ address: string; family: number }[]>;
}

/** Sends one delivery; its answer's status (the body is read and dropped). Redirects are not followed. */
export type DeliverySender = (
  url: URL,
  headers: Record<string, string>,
  body: string,
  options: DeliveryOptions,
) => Promise<number>;

/**
 * POSTs to the address checked a moment before (allowedAddresses), never to what the name resolves to
 * again at connect time: a name cannot be re-pointed at a private address between the check and the
 * connection. TLS still checks the certificate against the URL's host name.
 */
export const postDelivery: DeliverySender = async (url, headers, body, options) => {
  const [target] = await allowedAddresses(url, options.devMode, options.resolve);
  if (target === undefined) throw new Error('the name resolved to no address');
  const pinned: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all === true) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  // Plain HTTP is for dev mode only (checkWebhookUrl): node:http, whose load costs about 13 ms on top of
  // https, is loaded only by the deliveries that use it, so a production cold start never pays for it.
  const send = url.protocol === 'https:' ? https.request : (await import('node:http')).request;
  return new Promise<number>((resolve, reject) => {
    const request = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinned,
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
};
