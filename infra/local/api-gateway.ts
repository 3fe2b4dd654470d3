import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { StreamedResult } from '../../functions/api-stream.ts';
import { awsLimits, type GatewayResponse, gatewayResponseBody, gatewayResponses } from '../../lib/limits.ts';
import { describeError, type Log } from '../../lib/log.ts';
import type { FunctionContainers } from './function-containers.ts';
import type { ApiHandler, ResponseSink } from './http-server.ts';

export interface ApiGatewayOptions {
  /** The api function (buffered proxy integration, 29 s). */
  buffered: FunctionContainers<
    (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>
  >;
  /** The apiStream function (transfer mode STREAM, 15 minutes). */
  streaming: FunctionContainers<(event: APIGatewayProxyEvent, context: Context) => Promise<StreamedResult>>;
  isStreamRoute: (event: APIGatewayProxyEvent) => boolean;
  log: Log;
}

/** Writes one of API Gateway's own answers (the stack configures them with the same envelope). */
export function writeGatewayResponse(sink: ResponseSink, response: GatewayResponse): void {
  sink.start(response.status, { 'content-type': 'application/json' });
  sink.write(gatewayResponseBody(response));
  sink.end();
}

/**
 * API Gateway in front of the two api functions, with its limits: a buffered route that has not answered
 * within the integration timeout is 504 (the function may run on, to its own timeout, in its container);
 * a buffered response larger than Lambda's 6 MB is refused by Lambda and answered 502, as is a function
 * error. Streamed routes are written as produced, for up to 15 minutes.
 */
export function apiGateway(options: ApiGatewayOptions): ApiHandler {
  return async (event, sink) => {
    if (options.isStreamRoute(event)) {
      let started = false;
      try {
        // The invocation lasts until the body has been written, as a streaming Lambda's does.
        await options.streaming.invoke(async (handler, context) => {
          const result = await handler(event, context);
          started = true;
          await pipeToSink(result, sink);
        });
      } catch (error) {
        options.log.error('streaming function failed', { error: describeError(error) });
        if (!started) writeGatewayResponse(sink, gatewayResponses.integrationFailure);
        else sink.end();
      }
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), awsLimits.apiIntegrationTimeoutSeconds * 1000);
    });
    let result: APIGatewayProxyResult | 'timeout';
    try {
      const invocation = options.buffered.invoke((handler, context) => handler(event, context));
      // The function may still finish after the gateway gave up; its result then goes nowhere.
      invocation.catch(() => undefined);
      result = await Promise.race([invocation, deadline]);
    } catch (error) {
      options.log.error('api function failed', { error: describeError(error) });
      writeGatewayResponse(sink, gatewayResponses.integrationFailure);
      return;
    } finally {
      clearTimeout(timer);
    }
    if (result === 'timeout') {
      options.log.warn('api request ended by the integration timeout', {
        method: event.httpMethod,
        path: event.path,
        limitSeconds: awsLimits.apiIntegrationTimeoutSeconds,
      });
      writeGatewayResponse(sink, gatewayResponses.integrationTimeout);
      return;
    }
    const payloadBytes = Buffer.byteLength(JSON.stringify(result));
    if (payloadBytes > awsLimits.maxBufferedResponseBytes) {
      options.log.error('api response larger than Lambda allows; API Gateway answers 502', {
        method: event.httpMethod,
        path: event.path,
        payloadBytes,
        limitBytes: awsLimits.maxBufferedResponseBytes,
      });
      writeGatewayResponse(sink, gatewayResponses.integrationFailure);
      return;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
    sink.start(result.statusCode, headers);
    const body = Buffer.from(result.body, result.isBase64Encoded === true ? 'base64' : 'utf8');
    if (body.length > 0) sink.write(body);
    sink.end();
  };
}

/**
 * Writes a streamed result as Lambda's response stream does: status and headers first, then each chunk
 * as the body produces it, waiting while the client is behind; a client that goes away destroys the
 * body, which cancels the work that produces it.
 */
async function pipeToSink(result: StreamedResult, sink: ResponseSink): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers)) headers[name] = String(value);
  sink.start(result.statusCode, headers);
  const gone = () => result.body.destroy();
  sink.signal?.addEventListener('abort', gone, { once: true });
  try {
    for await (const chunk of result.body) {
      if (sink.signal?.aborted === true) break;
      if (sink.write(chunk as Buffer | string) === false && sink.drained !== undefined) await sink.drained();
    }
  } catch (error) {
    // A body destroyed because the client left ends early by design; anything else is the function's failure.
    if (sink.signal?.aborted !== true) throw error;
  } finally {
    sink.signal?.removeEventListener('abort', gone);
    sink.end();
  }
}
