import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { ResponseSink } from '../../functions/api.ts';
import { awsLimits, type GatewayResponse, gatewayResponseBody, gatewayResponses } from '../../lib/limits.ts';
import { describeError, type Log } from '../../lib/log.ts';
import type { FunctionContainers } from './function-containers.ts';
import type { ApiHandler } from './http-server.ts';

export interface ApiGatewayOptions {
  /** The api function (buffered proxy integration, 29 s). */
  buffered: FunctionContainers<(event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>>;
  /** The apiStream function (transfer mode STREAM, 15 minutes). */
  streaming: FunctionContainers<(event: APIGatewayProxyEvent, sink: ResponseSink) => Promise<void>>;
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
      const tracked: ResponseSink = {
        start: (status, headers) => {
          started = true;
          sink.start(status, headers);
        },
        write: (chunk) => sink.write(chunk),
        ...(sink.drained !== undefined && { drained: () => (sink.drained as () => Promise<void>)() }),
        end: () => sink.end(),
        ...(sink.signal !== undefined && { signal: sink.signal }),
      };
      try {
        await options.streaming.invoke((handler) => handler(event, tracked));
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
      const invocation = options.buffered.invoke((handler) => handler(event));
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
