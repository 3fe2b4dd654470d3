import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { orgKey, pointE2bAt } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * Ports and URLs through the E2B door (docs/e2b.md "Ports and URLs"), with the E2B SDK: the sandboxes'
 * `domain` (config e2b.sandboxDomain) routes `<port>-<sandboxId>.<domain>` to the sandbox, here sent to the
 * local runtime with that Host header (as a wildcard record would on AWS), on a fake pool whose ports are
 * a server of this test.
 */

/** A fake backend whose exposed port is a real local server, so a preview can be followed to it. */
class PortsAdapter extends FakeAdapter {
  base = '';
  override async exposePort(ref: string, port: number): Promise<string> {
    await super.exposePort(ref, port);
    return `${this.base}/backend/${ref}/${port}`;
  }
}

/** One request to the runtime with a Host header of our choosing (fetch does not let a caller set it). */
function send(
  url: string,
  host: string,
  init: { method?: string; path: string; body?: Buffer | string } = { path: '/' },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const call = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: init.method ?? 'GET',
        path: init.path,
        headers: {
          host,
          ...(init.body !== undefined && { 'content-type': 'application/octet-stream' }),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    call.on('error', reject);
    call.end(init.body);
  });
}

describe('ports and URLs through the E2B door', () => {
  const adapter = new PortsAdapter();
  let backend: Server;
  let e: E2e;
  let apiKey: string;
  let otherKey: string;

  beforeAll(async () => {
    backend = createServer((req, res) => {
      res.end(`backend ${req.method} ${req.url}`);
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    adapter.base = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
    e = await startE2e({
      fakes: { ports: { adapter } },
      config: { e2b: { allowedPools: ['ports'], sandboxDomain: 'sandbox.test' } },
    });
    pointE2bAt(e.runtime.url);
    apiKey = (await orgKey(e.runtime, 'porters')).e2bApiKey;
    otherKey = (await orgKey(e.runtime, 'others')).e2bApiKey;
  }, 60_000);

  afterAll(async () => {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await e?.stop();
    await new Promise((resolve) => backend?.close(resolve));
  });

  it('answers getHost(port) with a host that reaches the port, by host or by E2B Embed header', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    try {
      const host = sandbox.getHost(3000);
      expect(host).toBe(`3000-${sandbox.sandboxId}.sandbox.test`);
      const preview = await send(e.runtime.url, host, { path: '/app/page?q=1' });
      expect(preview.status).toBe(307);
      const location = String(preview.headers.location);
      expect(location).toMatch(/\/backend\/[^/]+\/3000\/app\/page\?q=1$/);
      expect(await (await fetch(location)).text()).toMatch(
        /^backend GET \/backend\/.+\/3000\/app\/page\?q=1$/,
      );
      // Browsers send host names in lower case: the same sandbox.
      expect((await send(e.runtime.url, host.toLowerCase(), { path: '/' })).status).toBe(307);
      // A POST stays one (307), and header routing reaches the same port.
      const byHeader = await fetch(`${e.runtime.url}/e2b/form`, {
        method: 'POST',
        headers: { 'e2b-sandbox-id': sandbox.sandboxId, 'e2b-sandbox-port': '3000' },
        body: 'x',
      });
      expect(await byHeader.text()).toMatch(/^backend POST \/backend\/.+\/3000\/form$/);
      // This pool offers no exec.root: a command as root is refused naming it, never run as another user.
      await expect(sandbox.commands.run('id -u', { user: 'root' })).rejects.toThrow(/running as root/);
      // A sandbox that does not exist, and a port that is no port, are refused.
      expect((await send(e.runtime.url, `3000-sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV.sandbox.test`)).status).toBe(
        404,
      );
      expect((await send(e.runtime.url, `99999-${sandbox.sandboxId}.sandbox.test`)).status).toBe(400);
    } finally {
      await sandbox.kill();
    }
  });

  it("serves envd by the sandbox's host, and signed file URLs bound to one sandbox, path and operation", async () => {
    const sandbox = await Sandbox.create({ apiKey });
    const other = await Sandbox.create({ apiKey: otherKey });
    try {
      await sandbox.files.write('/home/user/report.txt', 'quarterly');
      // Without E2B_SANDBOX_URL, the SDK addresses envd at https://49983-<id>.<domain>: here, over http.
      delete process.env.E2B_SANDBOX_URL;
      const direct = await Sandbox.connect(sandbox.sandboxId, { apiKey });
      const download = new URL(await direct.downloadUrl('/home/user/report.txt'));
      const upload = new URL(await direct.uploadUrl('/home/user/upload.txt'));
      const expiring = new URL(
        await direct.downloadUrl('/home/user/report.txt', { useSignatureExpiration: 60 }),
      );
      const expired = new URL(
        await direct.downloadUrl('/home/user/report.txt', { useSignatureExpiration: -1 }),
      );
      pointE2bAt(e.runtime.url);
      // (A URL's host is in lower case: routed all the same.)
      expect(download.host).toBe(`49983-${sandbox.sandboxId}.sandbox.test`.toLowerCase());
      const at = (url: URL) => `${url.pathname}${url.search}`;
      expect((await send(e.runtime.url, download.host, { path: at(download) })).body).toBe('quarterly');
      expect((await send(e.runtime.url, expiring.host, { path: at(expiring) })).body).toBe('quarterly');
      expect((await send(e.runtime.url, expired.host, { path: at(expired) })).status).toBe(401);
      const written = await send(e.runtime.url, upload.host, {
        method: 'POST',
        path: at(upload),
        body: 'sent',
      });
      expect(written.status).toBe(200);
      expect(await sandbox.files.read('/home/user/upload.txt')).toBe('sent');
      // Bound: another path, the other operation, another sandbox (another tenant's) are refused.
      const otherPath = new URL(download);
      otherPath.searchParams.set('path', '/home/user/upload.txt');
      expect((await send(e.runtime.url, download.host, { path: at(otherPath) })).status).toBe(401);
      expect(
        (await send(e.runtime.url, download.host, { method: 'POST', path: at(download), body: 'x' })).status,
      ).toBe(401);
      const otherHost = `49983-${other.sandboxId}.sandbox.test`;
      expect((await send(e.runtime.url, otherHost, { path: at(download) })).status).toBe(401);
      // envd's own calls by host, with the access token, as the SDK makes them without E2B_SANDBOX_URL.
      const health = await send(e.runtime.url, download.host, { path: '/health' });
      expect(health.status).toBe(401);
    } finally {
      pointE2bAt(e.runtime.url);
      await sandbox.kill();
      await other.kill();
    }
  });
});
