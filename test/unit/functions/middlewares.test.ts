import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { apiFunction } from '../../../functions/api.ts';
import { handlerFor } from '../../../functions/entry.ts';
import { observabilityFor } from '../../../functions/observability.ts';
import { provisionFunction } from '../../../functions/provision.ts';
import { sweepFunction } from '../../../functions/sweep.ts';
import { startLocalRuntime } from '../../../infra/local/runtime.ts';
import { testPlane } from '../../helpers/plane.ts';
import { capturePowertoolsOutput } from '../../helpers/powertools-output.ts';

const context = (requestId: string) =>
  ({
    functionName: 'differently-api',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:differently-api',
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    getRemainingTimeInMillis: () => 30_000,
  }) as Context;

const apiEvent = (path: string, requestId: string) =>
  ({
    httpMethod: 'GET',
    path,
    headers: {},
    queryStringParameters: null,
    body: null,
    isBase64Encoded: false,
    requestContext: { requestId },
  }) as unknown as APIGatewayProxyEvent;

/** Tools that log at DEBUG to stdout, where the capture reads them. */
function loudTools(service: string) {
  return { ...observabilityFor(service), logger: new Logger({ serviceName: service, logLevel: 'DEBUG' }) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the middleware stack every entry point runs in', () => {
  it('answers the API with security headers, on success and on an error the router did not catch', async () => {
    const { plane } = await testPlane();
    const api = handlerFor(apiFunction, plane, loudTools('api'));
    const ok = await api(apiEvent('/v1/health', 'req-ok'), context('lambda-ok'));
    expect(ok.statusCode).toBe(200);
    expect(ok.headers).toMatchObject({
      'Strict-Transport-Security': expect.stringContaining('max-age='),
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Content-Security-Policy': expect.stringContaining("default-src 'none'"),
    });

    // The API function's own stack around work that throws past the router.
    const broken = handlerFor(
      {
        ...apiFunction,
        core: () => async (): Promise<APIGatewayProxyResult> => {
          throw new Error('table differently-prod: secret sk_live_abc is wrong');
        },
      },
      plane,
      loudTools('api'),
    );
    const stdout = capturePowertoolsOutput();
    const failed = await broken(apiEvent('/v1/health', 'req-broken'), context('lambda-broken'));
    const lines = stdout.lines();
    expect(failed.statusCode).toBe(500);
    expect(JSON.parse(String(failed.body))).toEqual({
      error: { code: 'internal', message: 'internal error', details: {} },
    });
    expect(String(failed.body)).not.toContain('sk_live');
    expect(failed.headers).toMatchObject({ 'X-Content-Type-Options': 'nosniff' });
    // The cause is in the log (never in the answer), on a line that carries the invocation's ids.
    const logged = lines.find((line) => line.message === 'unhandled error in the api function');
    expect(logged).toMatchObject({
      level: 'ERROR',
      function_request_id: 'lambda-broken',
      correlation_id: 'req-broken',
      cold_start: expect.any(Boolean),
      error: { message: expect.stringContaining('secret') },
    });
  });

  it('puts the Lambda request id on every line a worker logs, and rethrows what fails the invocation', async () => {
    const { plane } = await testPlane();
    const tools = loudTools('provision');
    const worker = handlerFor(provisionFunction, { ...plane, log: powertools(tools.logger) }, tools);
    const stdout = capturePowertoolsOutput();
    const result = await worker(
      {
        Records: [{ messageId: 'm-1', body: 'not json', receiptHandle: 'r', attributes: {} }],
      } as unknown as SQSEvent,
      context('lambda-worker'),
    );
    const lines = stdout.lines();
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(
      lines.find((line) => line.message === 'malformed work message; it will be dead-lettered'),
    ).toMatchObject({
      function_request_id: 'lambda-worker',
      messageId: 'm-1',
    });

    const sweep = handlerFor(sweepFunction, plane, loudTools('sweep'));
    const failing = capturePowertoolsOutput();
    await expect(sweep({ task: 'something else' }, context('lambda-sweep'))).rejects.toThrow(/sweep expects/);
    expect(failing.lines().find((line) => line.message === 'invocation failed')).toMatchObject({
      function_request_id: 'lambda-sweep',
      error: { message: expect.stringContaining('sweep expects') },
    });
  });

  it('runs in the local runtime too: responses over HTTP carry the security headers', async () => {
    const runtime = await startLocalRuntime({ sweepIntervalSeconds: 0, reconcileIntervalSeconds: 0 });
    try {
      const response = await fetch(`${runtime.url}/v1/health`);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('strict-transport-security')).toContain('max-age=');
    } finally {
      await runtime.stop();
    }
  });
});

function powertools(logger: Logger) {
  return {
    debug: (message: string, extra?: Record<string, unknown>) => logger.debug(message, extra ?? {}),
    info: (message: string, extra?: Record<string, unknown>) => logger.info(message, extra ?? {}),
    warn: (message: string, extra?: Record<string, unknown>) => logger.warn(message, extra ?? {}),
    error: (message: string, extra?: Record<string, unknown>) => logger.error(message, extra ?? {}),
  };
}
