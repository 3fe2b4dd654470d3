import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type ControlPlane, createControlPlane } from '../lib/control-plane.ts';
import type { HttpResponse } from '../lib/http/types.ts';
import { correlationId, counted, requestFromEvent } from './api-events.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import { httpEdge } from './http-edge.ts';

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
 * streamed route still answers, within the buffered limits. The streamed routes' own function, which
 * sends bytes as they are produced, is functions/api-stream.ts.
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

export const apiFunction: FunctionDefinition<APIGatewayProxyEvent, APIGatewayProxyResult> = {
  name: 'api',
  kind: 'http',
  edge: httpEdge,
  core: (container, tools) => counted(createApiHandler(createControlPlane(container)), tools.metrics),
  correlationId,
};

export const handler = lambdaEntry(apiFunction);
