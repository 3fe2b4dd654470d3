import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { errors } from '../errors.ts';

/**
 * Where deliveries may go. Outside dev mode: HTTPS only, and never to loopback, link-local, private,
 * shared (CGNAT), unspecified, multicast or reserved addresses, whatever the name resolves to at the
 * moment of sending (a name that resolved to a public address at registration may not later). In dev
 * mode anything HTTP(S) goes, so a local receiver can be tested.
 */
const forbidden = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  forbidden.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  forbidden.addSubnet(network, prefix, 'ipv6');
}

export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6) {
    // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1] !== undefined) return forbidden.check(mapped[1], 'ipv4');
    return forbidden.check(address, 'ipv6');
  }
  return forbidden.check(address, 'ipv4');
}

/** The URL a registration names, checked (400 naming what is wrong); never anything but its origin is logged. */
export function checkWebhookUrl(raw: string, devMode: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidRequest('url is not a URL', { field: 'url' });
  }
  const schemes = devMode ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw errors.invalidRequest(`url must be ${devMode ? 'http or https' : 'https'}`, { field: 'url' });
  }
  if (url.username !== '' || url.password !== '') {
    throw errors.invalidRequest('url must not carry credentials: the signature authenticates deliveries', {
      field: 'url',
    });
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (
    !devMode &&
    (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && isForbiddenAddress(host)))
  ) {
    throw errors.invalidRequest('url must not name a loopback, link-local or private address', {
      field: 'url',
    });
  }
  return url;
}

/** The addresses a delivery may connect to: all of the name's, each allowed, else a refusal naming none. */
export async function allowedAddresses(
  url: URL,
  devMode: boolean,
  resolve: (host: string) => Promise<{ address: string; family: number }[]> = (host) =>
    lookup(host, { all: true, verbatim: true }),
): Promise<{ address: string; family: number }[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await resolve(host);
  if (addresses.length === 0) throw new Error('the name resolved to no address');
  if (!devMode && addresses.some(({ address }) => isForbiddenAddress(address))) {
    throw new Error('the name resolves to a loopback, link-local or private address');
  }
  return addresses;
}
