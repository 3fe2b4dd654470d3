import { Readable } from 'node:stream';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type ControlPlane, createControlPlane } from '../lib/control-plane.ts';
import type { HttpRequest, HttpResponse } from '../lib/http/types.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';

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

/** Binary bodies travel base64-encoded, as API Gateway's binary media types expect. */
export function resultFromResponse(response: HttpResponse): APIGatewayProxyResult {
  const binary = Buffer.isBuffer(response.body);
  return {
    statusCode: response.status,
    headers: response.headers,
    body: binary ? (response.body as Buffer).toString('base64') : (response.body as string),
    isBase64Encoded: binary,
  };
}

/**
 * The buffered handler (API Gateway's default transfer mode): a streamed body is collected whole, so a
 * streamed route still answers, within the buffered limits.
 */
export function createApiHandler(plane: ControlPlane) {
  return async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
    const response = await plane.handleHttp(requestFromEvent(event));
    if (response.stream === undefined) return resultFromResponse(response);
    const chunks: Buffer[] = [];
    let binary = false;
    await response.stream((chunk) => {
      binary ||= Buffer.isBuffer(chunk);
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'utf8'));
    });
    const body = Buffer.concat(chunks);
    return resultFromResponse({ ...response, body: binary ? body : body.toString('utf8') });
  };
}

/**
 * What the streaming handler answers: the status and headers, then a body read as it is produced (middy's
 * response streaming pipes it to Lambda's response stream; the local gateway to the HTTP response).
 */
export interface StreamedResult {
  statusCode: number;
  headers: Record<string, string>;
  body: Readable;
}

/**
 * A streamed route's body as a Readable: the route writes as it produces, waits while the reader is
 * behind (backpressure), and stops its work when the reader goes away (the stream is destroyed before
 * its end: the client disconnected).
 */
function bodyStream(response: HttpResponse, gone: AbortController): Readable {
  const produce = response.stream;
  if (produce === undefined) return Readable.from(response.body.length > 0 ? [response.body] : []);
  let ended = false;
  let resume: (() => void) | undefined;
  const body = new Readable({
    read() {
      resume?.();
      resume = undefined;
    },
    destroy(error, callback) {
      if (!ended) gone.abort();
      resume?.();
      callback(error);
    },
  });
  produce((chunk) => {
    if (body.destroyed || body.push(chunk)) return undefined;
    return new Promise<void>((resolve) => {
      resume = resolve;
    });
  }).then(
    () => {
      ended = true;
      if (!body.destroyed) body.push(null);
    },
    (error: unknown) => {
      ended = true;
      body.destroy(error instanceof Error ? error : new Error(String(error)));
    },
  );
  return body;
}

/**
 * The streaming handler (API Gateway's STREAM transfer mode with Lambda response streaming, and the local
 * runtime): streamed routes reach the client as produced; every other response is one chunk.
 */
export function createStreamingApiHandler(plane: ControlPlane) {
  return async (event: APIGatewayProxyEvent): Promise<StreamedResult> => {
    const gone = new AbortController();
    const response = await plane.handleHttp({ ...requestFromEvent(event), signal: gone.signal });
    return { statusCode: response.status, headers: response.headers, body: bodyStream(response, gone) };
  };
}

const correlationId = (event: APIGatewayProxyEvent) => event.requestContext?.requestId;

/** One `Responses` count per request under its status class (2xx, 4xx, 5xx), flushed with the invocation. */
function counted<R extends { statusCode: number }>(
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

export const apiFunction: FunctionDefinition<APIGatewayProxyEvent, APIGatewayProxyResult> = {
  name: 'api',
  kind: 'http',
  core: (container, tools) => counted(createApiHandler(createControlPlane(container)), tools.metrics),
  correlationId,
};

export const apiStreamFunction: FunctionDefinition<APIGatewayProxyEvent, StreamedResult> = {
  name: 'apiStream',
  kind: 'http',
  core: (container, tools) =>
    counted(createStreamingApiHandler(createControlPlane(container)), tools.metrics),
  correlationId,
};

export const handler = lambdaEntry(apiFunction);

/**
 * The handler of the streamed exec route on AWS (`streamHandler` in the function's handler setting):
 * middy's response streaming over `awslambda.streamifyResponse`, which only Lambda's Node runtime defines
 * (Powertools creates an `awslambda` global of its own everywhere, without it).
 */
export const streamHandler =
  typeof (globalThis as { awslambda?: { streamifyResponse?: unknown } }).awslambda?.streamifyResponse ===
  'function'
    ? lambdaEntry(apiStreamFunction, executionModeStreamifyResponse)
    : undefined;
