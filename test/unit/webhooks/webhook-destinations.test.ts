import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { allowedAddresses, checkWebhookUrl, isForbiddenAddress } from '../../../lib/webhooks/destinations.ts';
import { postDelivery } from '../../../lib/webhooks/sender.ts';
import { signDelivery, verifyDelivery } from '../../../lib/webhooks/signature.ts';

describe('where webhook deliveries may go', () => {
  it('refuses loopback, link-local, private, shared, unspecified and multicast addresses, in either family', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      'not-an-address',
    ]) {
      expect(isForbiddenAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
      expect(isForbiddenAddress(address), address).toBe(false);
    }
  });

  it('outside dev mode takes only https URLs naming no private host and no credentials', () => {
    expect(checkWebhookUrl('https://hooks.example.com/a?t=1', false).href).toBe(
      'https://hooks.example.com/a?t=1',
    );
    for (const url of [
      'http://hooks.example.com/a',
      'https://127.0.0.1/a',
      'https://[::1]/a',
      'https://10.0.0.8/a',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/a',
      'https://api.localhost/a',
      'https://user:pass@hooks.example.com/a',
      'ftp://hooks.example.com/a',
      'nonsense',
    ]) {
      expect(() => checkWebhookUrl(url, false), url).toThrow(
        expect.objectContaining({ code: 'invalid_request' }),
      );
    }
    // Dev mode: a receiver on this machine, over http, is fine.
    expect(checkWebhookUrl('http://127.0.0.1:8080/hook', true).port).toBe('8080');
  });

  it('checks what a name resolves to at the moment of sending, every address of it', async () => {
    const url = new URL('https://hooks.example.com/a');
    await expect(
      allowedAddresses(url, false, async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ]),
    ).rejects.toThrow(/private/);
    await expect(
      allowedAddresses(url, false, async () => [{ address: '93.184.216.34', family: 4 }]),
    ).resolves.toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('never connects to a refused address: a name re-pointed at loopback gets no request', async () => {
    let requests = 0;
    const server = createServer((_request, response) => {
      requests++;
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const options = { devMode: false, timeoutMs: 2000 };
      await expect(postDelivery(new URL(`http://127.0.0.1:${port}/x`), {}, '{}', options)).rejects.toThrow();
      await expect(
        postDelivery(new URL(`http://rebound.example:${port}/x`), {}, '{}', {
          ...options,
          resolve: async () => [{ address: '127.0.0.1', family: 4 }],
        }),
      ).rejects.toThrow(/private/);
      expect(requests).toBe(0);
      // The address checked is the one connected to: in dev mode the same name reaches the server.
      const status = await postDelivery(new URL(`http://rebound.example:${port}/x`), {}, '{}', {
        devMode: true,
        timeoutMs: 2000,
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      });
      expect([status, requests]).toEqual([200, 1]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('delivery signatures', () => {
  const body = '{"id":"evt_1"}';
  const now = 1_800_000_000;

  it('verifies with the secret over the timestamp and the exact body, within the replay window', () => {
    const header = signDelivery(['whsec_a'], now, body);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(verifyDelivery('whsec_a', header, body, now + 299)).toBe(true);
    expect(verifyDelivery('whsec_a', header, body, now + 301)).toBe(false);
    expect(verifyDelivery('whsec_b', header, body, now)).toBe(false);
    expect(verifyDelivery('whsec_a', header, '{"id":"evt_2"}', now)).toBe(false);
    expect(verifyDelivery('whsec_a', header.replace('t=1800000000', 't=1800000001'), body, now)).toBe(false);
    expect(verifyDelivery('whsec_a', undefined, body, now)).toBe(false);
  });

  it('carries one signature per valid secret during a rotation', () => {
    const header = signDelivery(['whsec_new', 'whsec_old'], now, body);
    expect(header.split(',')).toHaveLength(3);
    expect(verifyDelivery('whsec_new', header, body, now)).toBe(true);
    expect(verifyDelivery('whsec_old', header, body, now)).toBe(true);
  });
});
