import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HostSandboxes, type HostSandboxesOptions } from './host-sandboxes.ts';

/** The plumbing every fake provider shares: a server on a free 127.0.0.1 port, bodies, JSON answers. */
export interface FakeHttp {
  url: string;
  close(): Promise<void>;
}

export type FakeHandler = (
  req: IncomingMessage,
  url: URL,
  body: Buffer,
  res: ServerResponse,
) => Promise<void>;

export async function startFakeHttp(
  handler: FakeHandler,
  onError: (res: ServerResponse, error: unknown) => void,
): Promise<FakeHttp> {
  let base = '';
  const server: Server = createServer((req, res) => {
    void readAll(req)
      .then((body) => handler(req, new URL(req.url ?? '/', base), body, res))
      .catch((error: unknown) => {
        if (!res.headersSent) onError(res, error);
        else res.end();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Parses a multipart body the way a server framework would. */
export async function formDataOf(req: IncomingMessage, body: Buffer): Promise<FormData> {
  return new Request('http://fake/upload', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type'] ?? '' },
    body: new Uint8Array(body),
  }).formData();
}

/** One answer of a fake, as a contract test checks it against the provider's published API. */
export interface FakeExchange {
  method: string;
  /** Path and query, as received. */
  path: string;
  status: number;
  contentType: string | undefined;
  /** At most the first 64 KiB of the answer. */
  body: Buffer;
}

const recordedBodyBytes = 64 * 1024;

/** Keeps what a handler answers: status, content type and (the start of) the body. */
function recordAnswer(req: IncomingMessage, res: ServerResponse, into: FakeExchange[]): void {
  const chunks: Buffer[] = [];
  let kept = 0;
  const keep = (chunk: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function' || kept >= recordedBodyBytes)
      return;
    const bytes = Buffer.from(chunk as string | Uint8Array);
    chunks.push(bytes.subarray(0, recordedBodyBytes - kept));
    kept += bytes.length;
  };
  // Headers given to writeHead are not always readable with getHeader afterwards: keep them here.
  let contentType: string | undefined;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const headers = args.find((a, i) => i > 0 && typeof a === 'object' && a !== null);
    for (const [name, value] of Object.entries((headers ?? {}) as Record<string, unknown>))
      if (name.toLowerCase() === 'content-type') contentType = String(value);
    return writeHead(...args);
  }) as ServerResponse['writeHead'];
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((...args: unknown[]) => {
    keep(args[0]);
    return write(...args);
  }) as ServerResponse['write'];
  res.end = ((...args: unknown[]) => {
    keep(args[0]);
    const header = res.getHeader('content-type');
    into.push({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      status: res.statusCode,
      contentType: contentType ?? (header === undefined ? undefined : String(header)),
      body: Buffer.concat(chunks),
    });
    return end(...args);
  }) as ServerResponse['end'];
}

/** A fake provider: its HTTP server on a free port and the host directories its sandboxes run in. */
export abstract class FakeProvider {
  readonly host: HostSandboxes;
  url = '';
  /** Every answer given while `recording` is on, in order (contract tests validate them). */
  readonly exchanges: FakeExchange[] = [];
  recording = false;
  #http: FakeHttp | undefined;

  constructor(host: HostSandboxesOptions = {}) {
    this.host = new HostSandboxes(host);
  }

  protected abstract handle(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void>;
  /** The provider's own shape for an unexpected failure. */
  protected abstract internalError(res: ServerResponse, error: unknown): void;

  async start(): Promise<this> {
    this.#http = await startFakeHttp(
      (req, url, body, res) => {
        if (this.recording) recordAnswer(req, res, this.exchanges);
        return this.handle(req, url, body, res);
      },
      (res, error) => this.internalError(res, error),
    );
    this.url = this.#http.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.#http?.close();
    await this.host.close();
  }
}
