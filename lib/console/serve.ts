import { randomBytes } from 'node:crypto';
import { ApiError, toErrorResponse } from '../errors.ts';
import type { HttpRequest, HttpResponse } from '../http/types.ts';
import { type ConsoleAssets, consolePrefix, styleNoncePlaceholder } from './assets.ts';

/**
 * The console's Content-Security-Policy: scripts, styles, fonts and images only from the console's own
 * assets (no inline script, no eval, no third-party origin), requests only to this API, nothing framed.
 * Styles also take the page's nonce: the terminal widget (xterm.js) measures its grid into `<style>`
 * elements of its own, which the page's script gives that nonce as it makes them.
 */
export function consoleContentSecurityPolicy(styleNonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${styleNonce}'`,
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const contentTypes: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  map: 'application/json; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
  txt: 'text/plain; charset=utf-8',
};

/** Asset names are the build's: letters, digits, dashes, underscores and dots, in one folder. */
const assetName = /^assets\/[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

function notFound(path: string): HttpResponse {
  const { status, body } = toErrorResponse(new ApiError('not_found', `no console file at ${path}`, { path }));
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/**
 * Serves the console: `GET /console/` is the page (never cached: it names the current assets, and carries
 * a fresh style nonce), `GET /console/assets/<name>` the bundled scripts and styles (their names carry
 * their content's hash, so they are cached for a year). The console holds no data of its own: everything
 * it shows it reads from the public REST API with the key the user signs in with.
 */
export function createConsoleHandler(assets: ConsoleAssets | undefined) {
  return async (request: HttpRequest): Promise<HttpResponse> => {
    const method = request.method.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') {
      const { status, body } = toErrorResponse(
        new ApiError('method_not_allowed', `method ${request.method} is not allowed on ${request.path}`, {
          method: request.method,
          allow: ['GET', 'HEAD'],
        }),
      );
      return {
        status,
        headers: { 'content-type': 'application/json', allow: 'GET, HEAD' },
        body: JSON.stringify(body),
      };
    }
    // Relative, so it holds under a stage prefix (API Gateway's /live/console).
    if (request.path === consolePrefix)
      return { status: 308, headers: { location: 'console/', 'cache-control': 'no-cache' }, body: '' };
    const name = request.path.slice(consolePrefix.length + 1);
    if (assets === undefined) {
      const { status, body } = toErrorResponse(
        new ApiError('unsupported_operation', 'this deployment was built without the web console', {}),
      );
      return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    }
    if (name === '' || name === 'index.html') {
      const page = await assets.read('index.html');
      if (page === undefined) return notFound(request.path);
      const nonce = randomBytes(16).toString('base64');
      return {
        status: 200,
        headers: {
          'content-type': contentTypes.html as string,
          'cache-control': 'no-store',
          'Content-Security-Policy': consoleContentSecurityPolicy(nonce),
          'referrer-policy': 'no-referrer',
          'x-content-type-options': 'nosniff',
        },
        body:
          method === 'HEAD'
            ? ''
            : Buffer.from(page).toString('utf8').replaceAll(styleNoncePlaceholder, nonce),
      };
    }
    if (!assetName.test(name)) return notFound(request.path);
    const content = await assets.read(name);
    const type = contentTypes[name.slice(name.lastIndexOf('.') + 1)];
    if (content === undefined || type === undefined) return notFound(request.path);
    return {
      status: 200,
      headers: {
        'content-type': type,
        'cache-control': 'public, max-age=31536000, immutable',
        'x-content-type-options': 'nosniff',
      },
      body: method === 'HEAD' ? '' : Buffer.from(content),
    };
  };
}
