import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { awsLimits, gatewayResponseBody, gatewayResponses } from '../../lib/limits.ts';

/** API Gateway refuses bodies above 10 MB; the local server does the same before reading them whole. */
export const maxRequestBytes = awsLimits.maxRequestBytes;
/** Request headers the local server reads (API Gateway's own header limits are of this order). */
export const maxHeaderBytes = 16 * 1024;

/** Where the local gateway writes a response: the status and headers once, then chunks as they come. */
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

export type ApiHandler = (event: APIGatewayProxyEvent, sink: ResponseSink) => Promise<void>;

/**
 * Turns HTTP requests into API Gateway REST proxy events (the shape Lambda receives) for the same api
 * handler that runs on AWS, and writes its proxy result back.
 */
export async function startHttpServer(handler: ApiHandler, port: number, host = '127.0.0.1') {
  const server: Server = createServer({ maxHeaderSize: maxHeaderBytes }, (req, res) => {
    serve(handler, req, res).catch((error: unknown) => {
      // The handler masks its own errors; reaching here means the transport itself broke.
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'internal', message: 'internal error', details: {} } }));
      }
      process.emitWarning(`local http server: ${(error as Error).message}`);
    });
  });
  // What Node refuses before any handler runs (headers too large, a malformed request) is answered with
  // the error envelope too, as API Gateway's own refusals are.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const headersTooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const status = headersTooLarge ? 431 : 400;
    const body = JSON.stringify({
      error: {
        code: 'invalid_request',
        message: headersTooLarge
          ? `the request headers are larger than ${maxHeaderBytes} bytes`
          : 'the request is not valid HTTP',
        details: headersTooLarge ? { limitBytes: maxHeaderBytes } : {},
      },
    });
    socket.end(
      `HTTP/1.1 ${status} ${headersTooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(handler: ApiHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > maxRequestBytes) {
    tooLarge(res);
    discard(req);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxRequestBytes) {
      tooLarge(res);
      discard(req);
      return;
    }
    chunks.push(chunk as Buffer);
  }
  // A client that goes away before the answer is complete cancels what the answer was waiting on.
  const disconnected = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) disconnected.abort();
  });
  // The streaming handler: streamed routes are written as produced, others at once.
  await handler(toEvent(req, Buffer.concat(chunks)), {
    signal: disconnected.signal,
    start: (status, headers) => {
      res.writeHead(status, headers);
      res.flushHeaders();
    },
    write: (chunk) => res.write(chunk),
    drained: () =>
      new Promise<void>((resolve) => {
        // A client gone away never drains: the close settles the wait too (the work is cancelled then).
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      }),
    end: () => {
      res.end();
    },
  });
}

/**
 * Reads and drops the rest of a refused body, so the client (still sending) reads the 413 instead of a
 * reset; a body that goes on far past the limit is cut off.
 */
function discard(req: IncomingMessage): void {
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > 4 * maxRequestBytes) req.destroy();
  });
  req.resume();
}

function tooLarge(res: ServerResponse): void {
  res.writeHead(gatewayResponses.requestTooLarge.status, {
    'content-type': 'application/json',
    connection: 'close',
  });
  res.end(gatewayResponseBody(gatewayResponses.requestTooLarge));
}

function toEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEvent {
  const url = new URL(req.url ?? '/', 'http://local');
  // Maps, then plain objects built from entries: a header or query name like `constructor` or
  // `__proto__` is data, never a lookup on Object.prototype.
  const headerValues = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    headerValues.set(name, [...(headerValues.get(name) ?? []), req.rawHeaders[i + 1] ?? '']);
  }
  const queryValues = new Map<string, string[]>();
  for (const [name, value] of url.searchParams)
    queryValues.set(name, [...(queryValues.get(name) ?? []), value]);
  const last = (values: string[]) => values.at(-1) ?? '';
  const headers: Record<string, string> = Object.fromEntries([...headerValues].map(([k, v]) => [k, last(v)]));
  const multiValueHeaders: Record<string, string[]> = Object.fromEntries(headerValues);
  const query: Record<string, string> = Object.fromEntries([...queryValues].map(([k, v]) => [k, last(v)]));
  const multiQuery: Record<string, string[]> = Object.fromEntries(queryValues);
  const hasQuery = Object.keys(query).length > 0;
  const requestId = randomUUID();
  return {
    resource: '/{proxy+}',
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: { proxy: url.pathname.replace(/^\//, '') },
    stageVariables: null,
    // Bodies always travel base64-encoded: binary file content survives, and JSON decodes the same.
    body: body.length > 0 ? body.toString('base64') : null,
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        user: null,
        userAgent: req.headers['user-agent'] ?? null,
        userArn: null,
      },
      path: `/local${url.pathname}`,
      stage: 'local',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: '/{proxy+}',
    },
  };
}
