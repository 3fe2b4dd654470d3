import { Readable } from 'node:stream';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { type ControlPlane, createControlPlane } from '../lib/control-plane.ts';
import type { HttpResponse } from '../lib/http/types.ts';
import { correlationId, counted, requestFromEvent } from './api-events.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import { httpEdge } from './http-edge.ts';

/**
 * The response-streaming function of the API (the exec route with `?stream=1`, the MCP endpoint, the E2B
 * facade's process.Start): its own entry, because middy's response streaming loads Node's web streams at
 * import, which the buffered function (functions/api.ts), serving every other route, never uses.
 */

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

export const apiStreamFunction: FunctionDefinition<APIGatewayProxyEvent, StreamedResult> = {
  name: 'apiStream',
  kind: 'http',
  edge: httpEdge,
  core: (container, tools) =>
    counted(createStreamingApiHandler(createControlPlane(container)), tools.metrics),
  correlationId,
};

/**
 * The function's handler on AWS (`index.streamHandler` in its handler setting): middy's response streaming
 * over `awslambda.streamifyResponse`, which only Lambda's Node runtime defines (Powertools creates an
 * `awslambda` global of its own everywhere, without it).
 */
export const streamHandler =
  typeof (globalThis as { awslambda?: { streamifyResponse?: unknown } }).awslambda?.streamifyResponse ===
  'function'
    ? lambdaEntry(apiStreamFunction, executionModeStreamifyResponse)
    : undefined;
