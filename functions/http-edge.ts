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
export const httpEdge: HttpEdge = (logger) => [
  httpSecurityHeaders({
    // A JSON API: nothing it answers may be framed, sniffed or run as a page.
    contentSecurityPolicy: { 'default-src': "'none'", 'frame-ancestors': "'none'" },
  }),
  httpErrorEnvelope(logger),
];
