import type { ErrorEnvelope } from './schemas/common.ts';

/**
 * The limits AWS puts on this application, in one place. The CDK stack deploys with them and the local
 * runtime enforces them, so what API Gateway or Lambda would refuse is refused in tests first
 * (test/infra/limits.test.ts fails when the two disagree).
 */
export const awsLimits = {
  /** API Gateway's integration timeout for a REST API (buffered routes): it answers 504 past it. */
  apiIntegrationTimeoutSeconds: 29,
  /** A response-streaming integration may run this long (REST API transfer mode STREAM). */
  apiStreamIntegrationTimeoutSeconds: 900,
  /** API Gateway refuses larger request bodies with 413, before any function runs. */
  maxRequestBytes: 10 * 1024 * 1024,
  /** Lambda refuses a buffered (synchronous) response payload larger than this; API Gateway answers 502. */
  maxBufferedResponseBytes: 6 * 1024 * 1024,
} as const;

/**
 * What API Gateway answers when it, not the function, ends a request. The stack configures these as
 * gateway responses so clients always get the error envelope; the local runtime answers the same.
 */
export const gatewayResponses = {
  integrationTimeout: {
    status: 504,
    code: 'gateway_timeout',
    message: `the request took longer than API Gateway allows (${awsLimits.apiIntegrationTimeoutSeconds} s)`,
  },
  integrationFailure: {
    status: 502,
    code: 'bad_gateway',
    message: 'the function failed or its response was larger than Lambda allows (6 MB)',
  },
  requestTooLarge: {
    status: 413,
    code: 'payload_too_large',
    message: `the request is larger than API Gateway allows (${awsLimits.maxRequestBytes} bytes)`,
  },
} as const;

export type GatewayResponse = (typeof gatewayResponses)[keyof typeof gatewayResponses];

/** The envelope body of a gateway response, as JSON. */
export function gatewayResponseBody(response: GatewayResponse): string {
  const envelope: ErrorEnvelope = { error: { code: response.code, message: response.message, details: {} } };
  return JSON.stringify(envelope);
}
