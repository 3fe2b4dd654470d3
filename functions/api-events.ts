import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { HttpRequest } from '../lib/http/types.ts';

/**
 * What the API's two functions share at the API Gateway edge: the buffered one (functions/api.ts) and the
 * response-streaming one (functions/api-stream.ts) turn the same proxy event into the router's request
 * and count their answers alike. Each is its own bundle, so neither loads what only the other runs.
 */

/** API Gateway REST proxy event -> the transport-neutral request the router takes. */
export function requestFromEvent(event: APIGatewayProxyEvent): HttpRequest {
  // Built from entries, so a name like `__proto__` or `constructor` is an own property, never the prototype.
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries(event.headers ?? {}).flatMap(([name, value]) =>
      value === undefined ? [] : [[name.toLowerCase(), value]],
    ),
  );
  const query: Record<string, string> = Object.fromEntries(
    Object.entries(event.queryStringParameters ?? {}).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, value]],
    ),
  );
  return {
    method: event.httpMethod,
    path: event.path,
    query,
    headers,
    body:
      event.body === null || event.body === undefined
        ? undefined
        : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8'),
    requestId: event.requestContext?.requestId ?? 'unknown',
  };
}

/** The id every log line of a request carries: API Gateway's request id. */
export const correlationId = (event: APIGatewayProxyEvent) => event.requestContext?.requestId;

/** One `Responses` count per request under its status class (2xx, 4xx, 5xx), flushed with the invocation. */
export function counted<R extends { statusCode: number }>(
  handle: (event: APIGatewayProxyEvent) => Promise<R>,
  metrics: Metrics,
): (event: APIGatewayProxyEvent) => Promise<R> {
  return async (event) => {
    const result = await handle(event);
    metrics.addDimension('statusClass', `${Math.floor(result.statusCode / 100)}xx`);
    metrics.addMetric('Responses', MetricUnit.Count, 1);
    return result;
  };
}
