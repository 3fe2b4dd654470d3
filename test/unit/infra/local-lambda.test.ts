import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StreamedResult } from '../../../functions/api-stream.ts';
import { apiGateway } from '../../../infra/local/api-gateway.ts';
import { FunctionContainers, FunctionTimeout } from '../../../infra/local/function-containers.ts';
import type { ResponseSink } from '../../../infra/local/http-server.ts';
import { awsLimits } from '../../../lib/limits.ts';
import { silentLog } from '../../../lib/log.ts';

type Buffered = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
type Streaming = (event: APIGatewayProxyEvent) => Promise<StreamedResult>;

/** What a client receives through the local API Gateway. */
function recorder() {
  const out = { status: 0, headers: {} as Record<string, string>, body: '', ended: false };
  const sink: ResponseSink = {
    start: (status, headers) => {
      out.status = status;
      out.headers = headers;
    },
    write: (chunk) => {
      out.body += chunk.toString();
    },
    end: () => {
      out.ended = true;
    },
  };
  return { out, sink };
}

const event = (path = '/v1/usage', method = 'GET') => ({ path, httpMethod: method }) as APIGatewayProxyEvent;

const nothingStreamed: Streaming = async () => ({ statusCode: 204, headers: {}, body: Readable.from([]) });

function gateway(buffered: Buffered, streaming: Streaming = nothingStreamed) {
  const containers = <H>(name: string, build: () => H, timeoutSeconds: number) =>
    new FunctionContainers<H>({
      name,
      count: 2,
      coldStart: async () => build(),
      timeoutSeconds,
      log: silentLog,
    });
  return apiGateway({
    buffered: containers('api', () => buffered, awsLimits.apiIntegrationTimeoutSeconds + 1),
    streaming: containers('apiStream', () => streaming, awsLimits.apiStreamIntegrationTimeoutSeconds),
    isStreamRoute: (e) => e.path.endsWith('/exec'),
    log: silentLog,
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the local API Gateway', () => {
  it("answers 504 with the envelope when the api function has not answered within API Gateway's 29 s", async () => {
    vi.useFakeTimers();
    const slow = gateway(() => new Promise(() => undefined));
    const { out, sink } = recorder();
    const answered = slow(event(), sink);
    await vi.advanceTimersByTimeAsync(awsLimits.apiIntegrationTimeoutSeconds * 1000 - 1);
    expect(out.status).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await answered;
    expect(out.status).toBe(504);
    expect(JSON.parse(out.body)).toEqual({
      error: { code: 'gateway_timeout', message: expect.stringContaining('29 s'), details: {} },
    });
  });

  it("answers 502 when the buffered response is larger than Lambda's 6 MB, and passes one just under it", async () => {
    const sized = (bytes: number) =>
      gateway(async () => ({ statusCode: 200, headers: {}, body: 'x'.repeat(bytes) }));
    const big = recorder();
    await sized(awsLimits.maxBufferedResponseBytes + 1)(event(), big.sink);
    expect(big.out.status).toBe(502);
    expect(JSON.parse(big.out.body).error.code).toBe('bad_gateway');
    const fits = recorder();
    await sized(awsLimits.maxBufferedResponseBytes - 1024)(event(), fits.sink);
    expect(fits.out.status).toBe(200);
    expect(fits.out.body.length).toBe(awsLimits.maxBufferedResponseBytes - 1024);
  });

  it('answers 502 when the function throws, and decodes base64 bodies as API Gateway does', async () => {
    const failing = recorder();
    await gateway(async () => {
      throw new Error('boom');
    })(event(), failing.sink);
    expect(failing.out.status).toBe(502);
    const binary = recorder();
    await gateway(async () => ({
      statusCode: 200,
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from('bytes').toString('base64'),
      isBase64Encoded: true,
    }))(event(), binary.sink);
    expect(binary.out.body).toBe('bytes');
  });

  it('streams the exec route past 29 s, with no buffered-size limit', async () => {
    vi.useFakeTimers();
    const streamed = gateway(
      async () => ({ statusCode: 500, body: '' }),
      async () => ({
        statusCode: 200,
        headers: {},
        body: Readable.from(
          (async function* () {
            await new Promise((resolve) => setTimeout(resolve, 60_000));
            yield 'x'.repeat(awsLimits.maxBufferedResponseBytes + 1);
          })(),
        ),
      }),
    );
    const { out, sink } = recorder();
    const answered = streamed(event('/v1/sandboxes/sbx_1/exec', 'POST'), sink);
    await vi.advanceTimersByTimeAsync(60_000);
    await answered;
    expect(out.status).toBe(200);
    expect(out.body.length).toBe(awsLimits.maxBufferedResponseBytes + 1);
  });
});

describe('simulated Lambda containers', () => {
  it('cold-starts each container once with its own state, and sends concurrent invocations to different containers', async () => {
    let built = 0;
    const fn = new FunctionContainers({
      name: 'provision',
      count: 3,
      coldStart: async () => ({ id: ++built, seen: [] as number[] }),
      timeoutSeconds: 60,
      log: silentLog,
    });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = [1, 2, 3].map((n) =>
      fn.invoke(async (container) => {
        container.seen.push(n);
        await gate;
        return container.id;
      }),
    );
    release();
    expect((await Promise.all(held)).sort()).toEqual([1, 2, 3]);
    // Sequential calls afterwards rotate over the warm containers: no new cold start.
    const later = [];
    for (let i = 0; i < 6; i++) later.push(await fn.invoke(async (container) => container.id));
    expect(new Set(later)).toEqual(new Set([1, 2, 3]));
    expect(fn.coldStarts).toBe(3);
  });

  it("ends an invocation at the function's timeout and discards its container, as Lambda does", async () => {
    vi.useFakeTimers();
    let built = 0;
    const fn = new FunctionContainers({
      name: 'operations',
      count: 1,
      coldStart: async () => ++built,
      timeoutSeconds: 5,
      log: silentLog,
    });
    const stuck = fn.invoke(() => new Promise<number>(() => undefined));
    const failed = expect(stuck).rejects.toBeInstanceOf(FunctionTimeout);
    await vi.advanceTimersByTimeAsync(5000);
    await failed;
    // The next invocation meets a new container (its module state gone with the old one).
    expect(await fn.invoke(async (id) => id)).toBe(2);
  });
});
