import { describe, expect, it } from 'vitest';
import { createRouter } from '../../../lib/http/router.ts';
import { type HttpRequest, route } from '../../../lib/http/types.ts';
import { silentLog } from '../../../lib/log.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';

const request = (path: string, authorization?: string): HttpRequest => ({
  method: 'GET',
  path,
  query: {},
  headers: authorization === undefined ? {} : { authorization },
  body: undefined,
  requestId: 'r-1',
});

describe('the caller a route handler sees', () => {
  it('is anonymous on a route that needs no key, even when the admin key is sent; the admin on an admin route', async () => {
    const seen: Principal[] = [];
    const handle = createRouter(
      [
        route({
          method: 'GET',
          path: '/open',
          summary: 'open',
          auth: 'none',
          responses: { 204: null },
          handle: async ({ principal }) => {
            seen.push(principal);
            return { status: 204 };
          },
        }),
        route({
          method: 'GET',
          path: '/admin',
          summary: 'admin',
          auth: 'admin',
          responses: { 204: null },
          handle: async ({ principal }) => {
            seen.push(principal);
            return { status: 204 };
          },
        }),
      ],
      {
        authenticator: {
          authenticate: async (header) => {
            if (header === 'Bearer admin-key')
              return { principal: { kind: 'admin', keyId: 'admin', orgId: null }, along: {} };
            throw new Error('unexpected authentication');
          },
          authenticateSandbox: async () => {
            throw new Error('unexpected authentication');
          },
          authenticateSigned: async () => {
            throw new Error('unexpected authentication');
          },
        },
        log: silentLog,
      },
    );
    expect((await handle(request('/open'))).status).toBe(204);
    expect((await handle(request('/open', 'Bearer admin-key'))).status).toBe(204);
    expect((await handle(request('/admin', 'Bearer admin-key'))).status).toBe(204);
    expect(seen).toEqual([
      { kind: 'anonymous' },
      { kind: 'anonymous' },
      { kind: 'admin', keyId: 'admin', orgId: null },
    ]);
  });
});
