import { createSocket, type Socket } from 'node:dgram';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { withMiddlewares } from '../../../../functions/middlewares.ts';
import { observabilityFor } from '../../../../functions/observability.ts';
import { daemonAddress, XRayDaemonClient } from '../../../../functions/tracing/xray-daemon.ts';
import { tracingEnabledByEnvironment, XRayTracer } from '../../../../functions/tracing/xray-tracer.ts';
import { waitFor } from '../../../helpers/http-client.ts';
import { parseJson } from '../../../helpers/json.ts';

/** A subsegment document as X-Ray's daemon takes it (the segment document format), checked strictly. */
const subsegmentSchema = z.strictObject({
  type: z.literal('subsegment'),
  id: z.string().regex(/^[0-9a-f]{16}$/),
  trace_id: z.string(),
  parent_id: z.string().regex(/^[0-9a-f]{16}$/),
  name: z.string().min(1).max(200),
  start_time: z.number(),
  end_time: z.number(),
  namespace: z.enum(['aws', 'remote']).optional(),
  annotations: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  http: z
    .strictObject({
      request: z.strictObject({ method: z.string(), url: z.string() }).optional(),
      response: z.strictObject({ status: z.number(), content_length: z.number().optional() }).optional(),
    })
    .optional(),
  aws: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  error: z.literal(true).optional(),
  throttle: z.literal(true).optional(),
  fault: z.literal(true).optional(),
  cause: z
    .strictObject({
      exceptions: z.array(
        z.strictObject({
          id: z.string(),
          type: z.string(),
          message: z.string(),
          remote: z.literal(true).optional(),
        }),
      ),
    })
    .optional(),
});
type Document = z.infer<typeof subsegmentSchema>;

const traceRoot = '1-67a1b2c3-0123456789abcdef01234567';
const lambdaSegment = '53995c3f42cd8ad8';
const header = (sampled: '0' | '1', root = traceRoot) =>
  `Root=${root};Parent=${lambdaSegment};Sampled=${sampled}`;

/** A UDP server speaking the daemon's side of the protocol: a header line, then one JSON document. */
let daemon: Socket;
let daemonPort = 0;
const received: Document[] = [];

/** A DynamoDB endpoint answering by operation, as DynamoDB's JSON protocol does; it keeps what it was sent. */
let dynamo: Server;
let dynamoUrl = '';
const dynamoRequests: { target: string; headers: IncomingHttpHeaders }[] = [];
let queryFailuresLeft = 0;

/** A provider's HTTP API. */
let provider: Server;
let providerUrl = '';

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

beforeAll(async () => {
  daemon = createSocket('udp4');
  daemon.on('message', (message) => {
    const text = message.toString('utf8');
    const newline = text.indexOf('\n');
    expect(text.slice(0, newline)).toBe('{"format":"json","version":1}');
    received.push(parseJson(subsegmentSchema, text.slice(newline + 1)));
  });
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', () => resolve()));
  daemonPort = daemon.address().port;

  dynamo = createServer((request, response) => {
    const target = String(request.headers['x-amz-target'] ?? '').replace('DynamoDB_20120810.', '');
    dynamoRequests.push({ target, headers: request.headers });
    request.resume();
    const reply = (status: number, body: object) => {
      response.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-requestid': `req-${target}`,
      });
      response.end(JSON.stringify(body));
    };
    if (target === 'PutItem')
      return reply(400, {
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
      });
    if (target === 'UpdateItem')
      return reply(400, {
        __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
        message: 'Rate exceeded',
      });
    if (target === 'Query' && queryFailuresLeft > 0) {
      queryFailuresLeft--;
      return reply(500, { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'oops' });
    }
    if (target === 'Query') return reply(200, { Items: [], Count: 0, ScannedCount: 0 });
    return reply(200, { Item: { pk: { S: 'a' } } });
  });
  dynamoUrl = await listen(dynamo);

  provider = createServer((request, response) => {
    request.resume();
    response.writeHead(request.url?.startsWith('/missing') ? 404 : 201, {
      'content-type': 'application/json',
    });
    response.end('{}');
  });
  providerUrl = await listen(provider);
});

afterAll(async () => {
  daemon.close();
  await new Promise((resolve) => dynamo.close(resolve));
  await new Promise((resolve) => provider.close(resolve));
});

const tracers: XRayTracer[] = [];
function tracer(enabled = true): XRayTracer {
  const made = new XRayTracer({
    serviceName: 'differently-api',
    enabled,
    daemon: new XRayDaemonClient({ host: '127.0.0.1', port: daemonPort }),
  });
  tracers.push(made);
  return made;
}

function dynamoClient(made: XRayTracer, maxAttempts = 3): DynamoDBClient {
  return made.captureAWSv3Client(
    new DynamoDBClient({
      endpoint: dynamoUrl,
      region: 'eu-west-1',
      maxAttempts,
      credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' },
    }),
  );
}

/** The documents of one trace, once `count` of them have arrived. */
async function documentsOf(root: string, count: number): Promise<Document[]> {
  return waitFor(
    async () => received.filter((document) => document.trace_id === root),
    (documents) => documents.length >= count,
    `${count} subsegments of ${root}`,
  );
}

const byName = (documents: Document[], name: string): Document => {
  const found = documents.find((document) => document.name === name);
  if (found === undefined)
    throw new Error(`no subsegment ${name} in ${documents.map((d) => d.name).join(', ')}`);
  return found;
};

afterEach(() => {
  vi.unstubAllEnvs();
  for (const made of tracers.splice(0)) made.close();
  dynamoRequests.length = 0;
});

describe('the X-Ray tracer', () => {
  it('sends the invocation and each SDK call as subsegments linked to the Lambda segment, the header downstream', async () => {
    const root = '1-67a1b2c3-000000000000000000000001';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    vi.stubEnv('AWS_REGION', 'eu-west-1');
    const made = tracer();
    const client = dynamoClient(made);
    const documentClient = DynamoDBDocumentClient.from(client);

    const item = await made.traceInvocation('index.handler', async () => {
      await client.send(new GetItemCommand({ TableName: 'differently', Key: { pk: { S: 'a' } } }));
      return documentClient.send(new GetCommand({ TableName: 'differently', Key: { pk: 'a' } }));
    });
    expect(item.Item).toEqual({ pk: 'a' });

    const documents = await documentsOf(root, 3);
    expect(documents).toHaveLength(3);
    const invocation = byName(documents, '## index.handler');
    expect(invocation).toMatchObject({
      parent_id: lambdaSegment,
      annotations: { ColdStart: true, Service: 'differently-api' },
    });
    expect(invocation.fault).toBeUndefined();
    const calls = documents.filter((document) => document.name === 'DynamoDB');
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call).toMatchObject({
        namespace: 'aws',
        parent_id: invocation.id,
        aws: {
          operation: 'GetItem',
          region: 'eu-west-1',
          table_name: 'differently',
          request_id: 'req-GetItem',
          retries: 0,
        },
        http: { response: { status: 200 } },
      });
      expect(call.start_time).toBeGreaterThanOrEqual(invocation.start_time);
      expect(call.end_time).toBeLessThanOrEqual(invocation.end_time);
    }
    // DynamoDB received the trace header naming each call's own subsegment as the parent.
    expect(dynamoRequests.map((request) => request.headers['x-amzn-trace-id']).sort()).toEqual(
      calls.map((call) => `Root=${root};Parent=${call.id};Sampled=1`).sort(),
    );
  });

  it('flags a refused call as an error, a throttled one as throttle, and counts the retries of one that recovered', async () => {
    const root = '1-67a1b2c3-000000000000000000000002';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    const made = tracer();
    const client = dynamoClient(made);
    const once = dynamoClient(made, 1);
    queryFailuresLeft = 1;

    await made.traceInvocation('index.handler', async () => {
      await expect(
        client.send(new PutItemCommand({ TableName: 'differently', Item: { pk: { S: 'a' } } })),
      ).rejects.toThrow('The conditional request failed');
      await expect(
        once.send(new UpdateItemCommand({ TableName: 'differently', Key: { pk: { S: 'a' } } })),
      ).rejects.toThrow('Rate exceeded');
      await client.send(new QueryCommand({ TableName: 'differently', KeyConditionExpression: 'pk = :a' }));
    });

    const documents = await documentsOf(root, 4);
    const refused = documents.find((document) => document.aws?.operation === 'PutItem');
    expect(refused).toMatchObject({
      error: true,
      http: { response: { status: 400 } },
      cause: { exceptions: [{ type: 'ConditionalCheckFailedException', remote: true }] },
    });
    expect(refused?.fault).toBeUndefined();
    expect(refused?.throttle).toBeUndefined();
    const throttled = documents.find((document) => document.aws?.operation === 'UpdateItem');
    expect(throttled).toMatchObject({ error: true, throttle: true, http: { response: { status: 400 } } });
    const recovered = documents.find((document) => document.aws?.operation === 'Query');
    expect(recovered).toMatchObject({ aws: { retries: 1 }, http: { response: { status: 200 } } });
    expect(recovered?.fault).toBeUndefined();
    // The invocation itself did not fail.
    expect(byName(documents, '## index.handler').fault).toBeUndefined();
  });

  it('nests a backend call and the fetch() requests it makes, without the query string', async () => {
    const root = '1-67a1b2c3-000000000000000000000003';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    const made = tracer();

    await made.traceInvocation('index.handler', () =>
      made.subsegment('opensandbox.create', { pool: 'eu-pool', adapter: 'opensandbox' }, async () => {
        await (
          await fetch(`${providerUrl}/v1/sandboxes?access_token=s3cr3t-token`, { method: 'POST' })
        ).text();
        await (await fetch(`${providerUrl}/missing`)).text();
      }),
    );

    const documents = await documentsOf(root, 4);
    const invocation = byName(documents, '## index.handler');
    const call = byName(documents, 'opensandbox.create');
    expect(call).toMatchObject({
      parent_id: invocation.id,
      annotations: { pool: 'eu-pool', adapter: 'opensandbox' },
    });
    const requests = documents.filter((document) => document.namespace === 'remote');
    expect(requests.map((request) => [request.name, request.parent_id, request.http])).toEqual([
      [
        '127.0.0.1',
        call.id,
        { request: { method: 'POST', url: `${providerUrl}/v1/sandboxes` }, response: { status: 201 } },
      ],
      [
        '127.0.0.1',
        call.id,
        { request: { method: 'GET', url: `${providerUrl}/missing` }, response: { status: 404 } },
      ],
    ]);
    expect(requests[1]?.error).toBe(true);
    expect(JSON.stringify(received)).not.toContain('s3cr3t-token');
  });

  it('records a failed backend call and a failed invocation as faults, and rethrows', async () => {
    const root = '1-67a1b2c3-000000000000000000000004';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    const made = tracer();
    await expect(
      made.traceInvocation('index.handler', () =>
        made.subsegment('daytona.stop', { pool: 'p' }, async () => {
          throw new Error('the sandbox is gone');
        }),
      ),
    ).rejects.toThrow('the sandbox is gone');
    const documents = await documentsOf(root, 2);
    for (const name of ['## index.handler', 'daytona.stop'])
      expect(byName(documents, name)).toMatchObject({
        fault: true,
        cause: { exceptions: [{ type: 'Error', message: 'the sandbox is gone' }] },
      });
  });

  it('sends nothing and no header for an unsampled request, nor when tracing is off; the work runs alike', async () => {
    const unsampled = '1-67a1b2c3-000000000000000000000005';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('0', unsampled));
    const made = tracer();
    const off = tracer(false);
    const client = dynamoClient(made);
    const offClient = dynamoClient(off);
    await made.traceInvocation('index.handler', () =>
      client.send(new GetItemCommand({ TableName: 'differently', Key: { pk: { S: 'a' } } })),
    );
    const sampled = '1-67a1b2c3-000000000000000000000006';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', sampled));
    await off.traceInvocation('index.handler', () =>
      offClient.send(new GetItemCommand({ TableName: 'differently', Key: { pk: { S: 'a' } } })),
    );
    // Outside any invocation, a traced client's calls pass through too.
    await client.send(new GetItemCommand({ TableName: 'differently', Key: { pk: { S: 'a' } } }));
    expect(dynamoRequests).toHaveLength(3);
    for (const request of dynamoRequests) expect(request.headers['x-amzn-trace-id']).toBeUndefined();

    // A sampled invocation after them: once its documents are in, nothing else was sent.
    const after = '1-67a1b2c3-000000000000000000000007';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', after));
    await made.traceInvocation('index.handler', async () => undefined);
    await documentsOf(after, 1);
    expect(received.filter((document) => [unsampled, sampled].includes(document.trace_id))).toEqual([]);
  });

  it('annotates the cold start on the first invocation only, through the middleware stack', async () => {
    const root = '1-67a1b2c3-000000000000000000000008';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    vi.stubEnv('_HANDLER', 'index.handler');
    const tools = { ...observabilityFor('differently-provision'), tracer: tracer() };
    const handler = withMiddlewares(async () => ({ output: 'a secret command output' }), tools, {
      kind: 'worker',
    });
    const context = {
      awsRequestId: 'r1',
      functionName: 'f',
      getRemainingTimeInMillis: () => 1000,
    } as Context;
    await handler({}, context);
    await handler({}, context);
    const documents = await documentsOf(root, 2);
    expect(documents.map((document) => [document.name, document.annotations?.ColdStart])).toEqual([
      ['## index.handler', true],
      ['## index.handler', false],
    ]);
    // The response is never put on the trace.
    expect(JSON.stringify(documents)).not.toContain('a secret command output');
  });
});

describe('where tracing is on and where documents go', () => {
  it('has handed every document to the kernel when the invocation returns: a container frozen then loses none', async () => {
    const root = '1-67a1b2c3-000000000000000000000009';
    vi.stubEnv('_X_AMZN_TRACE_ID', header('1', root));
    const made = tracer();
    await made.traceInvocation('index.handler', async () =>
      made.subsegment('Backend', {}, async () => 'done'),
    );
    // The socket goes at once, as a frozen (then ended) container's would: a datagram still queued in
    // the process (the socket's first send waits for its bind) would be dropped with it.
    made.close();
    const documents = await documentsOf(root, 2);
    expect(documents.map((document) => document.name).sort()).toEqual(['## index.handler', 'Backend']);
  });

  it('traces on Lambda only, never under sam local', () => {
    expect(tracingEnabledByEnvironment({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x' })).toBe(true);
    expect(
      tracingEnabledByEnvironment({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x', AWS_SAM_LOCAL: 'true' }),
    ).toBe(false);
    expect(tracingEnabledByEnvironment({})).toBe(false);
  });

  it('reads the daemon address as Lambda writes it, falling back to the default', () => {
    expect(daemonAddress('169.254.79.129:2000')).toEqual({ host: '169.254.79.129', port: 2000 });
    expect(daemonAddress('tcp:10.0.0.1:2001 udp:10.0.0.2:2002')).toEqual({ host: '10.0.0.2', port: 2002 });
    expect(daemonAddress('udp:10.0.0.2:2002 tcp:10.0.0.1:2001')).toEqual({ host: '10.0.0.2', port: 2002 });
    for (const bad of [undefined, '', 'nonsense', 'host:99999', 'tcp:10.0.0.1:2001 tcp:10.0.0.3:2003'])
      expect(daemonAddress(bad)).toEqual({ host: '127.0.0.1', port: 2000 });
  });
});
