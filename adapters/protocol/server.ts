import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adapterProtocolVersion } from '../../lib/adapter/port.ts';
import type { ProtocolHandler } from './handler.ts';
import { protocolHeader } from './wire.ts';

export interface AdapterServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

function refuse(res: ServerResponse, status: number, code: string, message: string, details = {}) {
  res.writeHead(status, {
    'content-type': 'application/json',
    [protocolHeader]: adapterProtocolVersion,
    connection: 'close',
  });
  res.end(JSON.stringify({ error: { code, message, details } }));
}

/** Reads a body up to `limit` bytes; resolves undefined (and stops reading) past it. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Runs a protocol handler as a plain Node HTTP server (the plugin server and tests). */
export async function startAdapterServer(
  handler: ProtocolHandler,
  options: { port?: number; host?: string } = {},
): Promise<AdapterServer> {
  const server = createServer((req, res) => {
    void serve(handler, req, res).catch(() => {
      if (!res.headersSent) refuse(res, 500, 'internal', 'internal error');
      else res.end();
    });
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function serve(handler: ProtocolHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://adapter');
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers))
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  // Authentication and size come before the body is read: neither a stranger nor an oversized upload
  // costs more than its headers.
  if (!handler.authorized(headers)) {
    refuse(res, 401, 'unauthenticated', 'a valid adapter token is required');
    return;
  }
  const method = req.method ?? 'GET';
  const limit = handler.bodyLimit(method, url.pathname);
  const declared = Number(headers['content-length'] ?? '0');
  const tooLarge = () =>
    refuse(res, 413, 'payload_too_large', `the request body is larger than the limit of ${limit} bytes`, {
      limitBytes: limit,
    });
  if (declared > limit) {
    tooLarge();
    return;
  }
  const body = method === 'GET' || method === 'DELETE' ? undefined : await readBody(req, limit);
  if (body === undefined && method !== 'GET' && method !== 'DELETE') {
    tooLarge();
    return;
  }
  const response = await handler({ method, path: url.pathname, query: url.searchParams, headers, body });
  res.writeHead(response.status, response.headers);
  if (response.stream === undefined) {
    res.end(response.body);
    return;
  }
  // write() answers false when the socket's buffer is full: the stream then waits for it to drain
  // (backpressure), and never hands the boolean on as if it were a promise.
  const closed = new AbortController();
  res.once('close', () => closed.abort());
  await response.stream(
    (line) =>
      res.destroyed || res.write(line)
        ? undefined
        : new Promise<void>((resolve) => {
            res.once('drain', () => resolve());
            res.once('close', () => resolve());
          }),
    closed.signal,
  );
  res.end();
}
