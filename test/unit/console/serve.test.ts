import { describe, expect, it } from 'vitest';
import { type ConsoleAssets, styleNoncePlaceholder } from '../../../lib/console/assets.ts';
import { createConsoleHandler } from '../../../lib/console/serve.ts';
import type { HttpRequest } from '../../../lib/http/types.ts';

const page = `<meta name="style-nonce" content="${styleNoncePlaceholder}"><script type="module" src="assets/app-ABC.js"></script>`;
const files = new Map<string, string>([
  ['index.html', page],
  ['assets/app-ABC.js', 'console.log(1)'],
  ['assets/app-DEF.css', 'body{}'],
]);
const assets: ConsoleAssets = {
  read: async (name) => (files.has(name) ? Buffer.from(files.get(name) as string) : undefined),
};
const request = (path: string, method = 'GET'): HttpRequest => ({
  method,
  path,
  query: {},
  headers: {},
  body: undefined,
  requestId: 'r1',
});

describe('the console handler', () => {
  const handle = createConsoleHandler(assets);

  it('serves the page uncached, with a fresh nonce in the page and in its policy', async () => {
    const first = await handle(request('/console/'));
    const second = await handle(request('/console/'));
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    const nonceOf = (body: unknown) => /content="([^"]+)"/.exec(String(body))?.[1] ?? '';
    const nonce = nonceOf(first.body);
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(nonceOf(second.body)).not.toBe(nonce);
    const policy = first.headers['Content-Security-Policy'] ?? '';
    expect(policy).toContain(`style-src 'self' 'nonce-${nonce}'`);
    expect(policy).toContain("script-src 'self';");
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).not.toMatch(/unsafe-(inline|eval)/);
  });

  it('serves hashed assets as immutable with their type, and nothing outside the build', async () => {
    const script = await handle(request('/console/assets/app-ABC.js'));
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(String(script.body)).toBe('console.log(1)');
    expect((await handle(request('/console/assets/app-DEF.css'))).headers['content-type']).toContain(
      'text/css',
    );
    for (const path of [
      '/console/assets/../index.html',
      '/console/package.json',
      '/console/assets/missing.js',
      '/console/assets/x.exe',
    ])
      expect((await handle(request(path))).status, path).toBe(404);
  });

  it('redirects /console to the page relative to itself (a stage prefix holds) and takes only reads', async () => {
    const redirect = await handle(request('/console'));
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe('console/');
    const post = await handle(request('/console/', 'POST'));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect((await handle(request('/console/', 'HEAD'))).body).toBe('');
  });

  it('says so when the deployment carries no console', async () => {
    const answer = await createConsoleHandler(undefined)(request('/console/'));
    expect(answer.status).toBe(501);
    expect(String(answer.body)).toContain('built without the web console');
  });
});
