import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { ControlPlane } from '../lib/control-plane.ts';
import type { HttpRequest, HttpResponse } from '../lib/http/types.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** API Gateway REST proxy event -> the transport-neutral request the router takes. */
export function requestFromEvent(event: APIGatewayProxyEvent): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined) query[name] = value;
  }
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

export function createApiHandler(plane: ControlPlane) {
  return async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> =>
    resultFromResponse(await plane.handleHttp(requestFromEvent(event)));
}

const apiHandler = once(async () => createApiHandler(await controlPlaneFromEnv()));

export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> =>
  (await apiHandler())(event);
