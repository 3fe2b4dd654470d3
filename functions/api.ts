import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import type { HttpRequest, HttpResponse } from '../lib/http/types.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

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
    const chunks: string[] = [];
    await response.stream((chunk) => {
      chunks.push(chunk);
    });
    return resultFromResponse({ ...response, body: chunks.join('') });
  };
}

/** Where a streaming handler writes: the status and headers once, then chunks as they come. */
export interface ResponseSink {
  start(status: number, headers: Record<string, string>): void;
  /** false when the transport holds more than it wants (the client reads slower than we write). */
  write(chunk: string | Buffer): boolean | undefined;
  /** Resolves when the transport can take more after a write answered false. */
  drained?(): Promise<void>;
  end(): void;
  /** Aborted when the client disconnects before the end: streamed work is cancelled with it. */
  signal?: AbortSignal;
}

/**
 * The streaming handler (API Gateway's STREAM transfer mode with Lambda response streaming, and the local
 * runtime): streamed routes reach the client as produced; every other response is written at once.
 */
export function createStreamingApiHandler(plane: ControlPlane) {
  return async (event: APIGatewayProxyEvent, sink: ResponseSink): Promise<void> => {
    const response = await plane.handleHttp({ ...requestFromEvent(event), signal: sink.signal });
    sink.start(response.status, response.headers);
    try {
      if (response.stream !== undefined) {
        // Backpressure: a full transport makes the producer wait (ndjsonStream hands the promise back).
        await response.stream((chunk) =>
          sink.write(chunk) === false && sink.drained !== undefined ? sink.drained() : undefined,
        );
      } else if (response.body.length > 0) sink.write(response.body);
    } finally {
      sink.end();
    }
  };
}

const apiHandler = once(async () => createApiHandler(await controlPlaneFromEnv()));

export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> =>
  (await apiHandler())(event);

/** The Lambda runtime's response-streaming API (a global inside Lambda only). */
interface AwsLambdaStreaming {
  streamifyResponse(
    handler: (event: APIGatewayProxyEvent, stream: NodeJS.WritableStream) => Promise<void>,
  ): unknown;
  HttpResponseStream: {
    from(
      stream: NodeJS.WritableStream,
      metadata: { statusCode: number; headers: Record<string, string> },
    ): NodeJS.WritableStream;
  };
}

const streamingApiHandler = once(async () => createStreamingApiHandler(await controlPlaneFromEnv()));
const awslambda = (globalThis as { awslambda?: AwsLambdaStreaming }).awslambda;

/** The handler of the streamed exec route on AWS (`streamHandler` in the function's handler setting). */
export const streamHandler =
  typeof awslambda?.streamifyResponse !== 'function'
    ? undefined
    : awslambda.streamifyResponse(async (event, responseStream) => {
        let out: NodeJS.WritableStream = responseStream;
        // The response stream closes early when API Gateway's client disconnects.
        const disconnected = new AbortController();
        responseStream.on('close', () => disconnected.abort());
        responseStream.on('error', () => disconnected.abort());
        await (await streamingApiHandler())(event, {
          signal: disconnected.signal,
          start: (statusCode, headers) => {
            out = awslambda.HttpResponseStream.from(responseStream, { statusCode, headers });
          },
          write: (chunk) => out.write(chunk),
          drained: () => new Promise((resolve) => out.once('drain', () => resolve())),
          end: () => {
            out.end();
          },
        });
      });
