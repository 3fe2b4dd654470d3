import type { MiddlewareObj } from '@middy/core';
import httpSecurityHeaders from '@middy/http-security-headers';
import { toErrorResponse } from '../lib/errors.ts';
import { describeError } from '../lib/log.ts';
import type { HttpEdge } from './middlewares.ts';
import type { Observability } from './observability.ts';

/**
 * The one error model at the Lambda edge of the API: the router already answers every error it meets;
 * anything that escapes it (a cold start that failed, a bug in a middleware) is logged with its cause
 * and answered with the masked `internal` envelope, never a stack or a message from inside.
 */
function httpErrorEnvelope(logger: Observability['logger']): MiddlewareObj {
  return {
    name: 'http-error-envelope',
    onError: (request) => {
      logger.error('unhandled error in the api function', { error: describeError(request.error) });
      const { status, body } = toErrorResponse(request.error);
      request.response = {
        statusCode: status,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        isBase64Encoded: false,
      };
    },
  };
}

/**
 * The API functions' edge (functions/api.ts, functions/api-stream.ts): the security headers every response
 * carries and the error envelope. Its own module, so that a worker's bundle does not load middy's
 * security-headers middleware.
 */
export const httpEdge: HttpEdge = (logger) => [securityHeaders(), httpErrorEnvelope(logger)];

/**
 * middy's security headers, with one exception: a response that states its own Content-Security-Policy
 * keeps it. Only the web console's page does (lib/console/serve.ts), whose policy lets its own scripts
 * and styles run; everything else is JSON, which nothing may frame, sniff or run as a page.
 */
function securityHeaders(): MiddlewareObj {
  const headers = httpSecurityHeaders({
    contentSecurityPolicy: { 'default-src': "'none'", 'frame-ancestors': "'none'" },
  });
  const keepingOwnPolicy = (apply: MiddlewareObj['after']): MiddlewareObj['after'] =>
    apply === undefined
      ? undefined
      : async (request) => {
          const own = headersOf(request.response)?.[contentSecurityPolicy];
          await apply(request);
          const headers = headersOf(request.response);
          if (own !== undefined && headers !== undefined) headers[contentSecurityPolicy] = own;
        };
  return {
    name: 'http-security-headers',
    after: keepingOwnPolicy(headers.after),
    onError: keepingOwnPolicy(headers.onError),
  };
}

const contentSecurityPolicy = 'Content-Security-Policy';

function headersOf(response: unknown): Record<string, string> | undefined {
  return (response as { headers?: Record<string, string> } | null | undefined)?.headers;
}
