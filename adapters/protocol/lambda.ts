import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';

/** The structured result (Function URLs also accept a bare string, which this never returns). */
export type FunctionUrlResult = Exclude<LambdaFunctionURLResult, string>;

import { adapterProtocolVersion } from '../../lib/adapter/port.ts';
import type { ProtocolHandler } from './handler.ts';
import { protocolHeader } from './wire.ts';

/**
 * The protocol behind a Lambda Function URL. Function URLs buffer responses unless the function streams,
 * so a streamed exec is collected and returned whole here (the client reads it as NDJSON all the same);
 * run the Node server where output must arrive as produced.
 */
/** How long a buffered attach collects output before it detaches. */
const bufferedAttachMs = 5_000;

export function lambdaAdapterHandler(handler: ProtocolHandler) {
  return async (event: LambdaFunctionURLEvent): Promise<FunctionUrlResult> => {
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
    const body =
      event.body === undefined
        ? undefined
        : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
    const method = event.requestContext.http.method;
    const limit = handler.bodyLimit(method, event.rawPath);
    if (body !== undefined && body.length > limit) {
      return {
        statusCode: 413,
        // Every answer carries the protocol header, refusals included: the client checks it first.
        headers: { 'content-type': 'application/json', [protocolHeader]: adapterProtocolVersion },
        body: JSON.stringify({
          error: {
            code: 'payload_too_large',
            message: `the request body is larger than ${limit} bytes`,
            details: { limitBytes: limit },
          },
        }),
      };
    }
    const response = await handler({
      method,
      path: event.rawPath,
      query: new URLSearchParams(event.rawQueryString ?? ''),
      headers,
      body,
    });
    let text = typeof response.body === 'string' ? response.body : undefined;
    if (response.stream !== undefined) {
      const lines: string[] = [];
      // Buffered: an attach answers what its process printed within a few seconds, then detaches (the
      // client attaches again); a streamed exec never looks at the signal.
      await response.stream((line) => {
        lines.push(line);
        return undefined;
      }, AbortSignal.timeout(bufferedAttachMs));
      text = lines.join('');
    }
    if (text === undefined && Buffer.isBuffer(response.body)) {
      return {
        statusCode: response.status,
        headers: response.headers,
        body: response.body.toString('base64'),
        isBase64Encoded: true,
      };
    }
    return { statusCode: response.status, headers: response.headers, body: text ?? '' };
  };
}
