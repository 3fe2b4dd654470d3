import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { createProtocolHandler } from '../../../adapters/protocol/handler.ts';
import { type AdapterServer, startAdapterServer } from '../../../adapters/protocol/server.ts';

const token = 'protocol-limit-token-0123456789';
const mib = 1024 * 1024;

/**
 * A PUT to the plugin server: `size` bytes streamed in 1 MiB chunks (never held whole), with or
 * without a declared Content-Length. Resolves with the status and the body the server answered.
 */
function put(server: AdapterServer, path: string, size: number, declare: boolean) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/octet-stream',
          ...(declare && { 'content-length': String(size) }),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // The server may answer and close before the upload ends: that is the point.
    req.on('error', (error) =>
      error.message.includes('EPIPE') || error.message.includes('ECONNRESET') ? undefined : reject(error),
    );
    const chunk = Buffer.alloc(mib);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const part = Math.min(mib, size - sent);
        sent += part;
        if (!req.write(part === mib ? chunk : chunk.subarray(0, part))) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    if (declare && size > 100 * mib) req.end();
    else pump();
  });
}

describe('the adapter protocol’s upload limit (100 MiB per file)', () => {
  let server: AdapterServer;
  let ref: string;
  beforeAll(async () => {
    const fake = new FakeAdapter();
    server = await startAdapterServer(createProtocolHandler(fake, { token }));
    ref = (
      await fake.create({
        id: 'sbx_01M8VHEFP0Z3NBT4WQ94XJH6K7',
        installation: 'limits',
        resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
        env: {},
        labels: {},
      })
    ).ref;
  });
  afterAll(async () => {
    await server?.close();
  });

  const path = () => `/adapter/v1/instances/${ref}/files/content?path=%2Fwork%2Fbig.bin`;

  it('refuses a declared upload over 100 MiB at once, with the limit', async () => {
    const refused = await put(server, path(), 100 * mib + 1, true);
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: { code: 'payload_too_large', details: { limitBytes: 100 * mib } },
    });
  });

  it('refuses an undeclared (chunked) upload as soon as it passes 100 MiB', async () => {
    const refused = await put(server, path(), 100 * mib + 1, false);
    expect(refused.status).toBe(413);
  }, 60_000);

  it('takes an upload of exactly 100 MiB', async () => {
    const taken = await put(server, path(), 100 * mib, true);
    expect(taken.status).toBeLessThan(300);
  }, 60_000);
});
