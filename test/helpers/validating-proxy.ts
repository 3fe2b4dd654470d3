import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonObject, parseJson } from './json.ts';
import { OpenApiValidator } from './openapi-validator.ts';

/**
 * A validating gateway in front of the API, as Prism's proxy mode is: every request and answer passes
 * through unchanged (streams stream), and each exchange is held to docs/openapi.json; what breaks it is
 * collected in `problems`. Paths outside the document's scope (`/e2b`, documented in docs/e2b.md) pass
 * unchecked.
 */
export interface ValidatingProxy {
  url: string;
  problems: string[];
  /** How many exchanges were checked. */
  checked(): number;
  close(): Promise<void>;
}

const capturedBytes = 256 * 1024;

export async function startValidatingProxy(target: string): Promise<ValidatingProxy> {
  const document = parseJson(
    jsonObject,
    readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'),
  );
  const validator = new OpenApiValidator(document);
  const problems: string[] = [];
  let checked = 0;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const kept: Buffer[] = [];
          let size = 0;
          answer.on('data', (chunk: Buffer) => {
            if (size < capturedBytes) kept.push(chunk);
            size += chunk.length;
            res.write(chunk);
          });
          answer.on('end', () => {
            res.end();
            if (req.url?.startsWith('/e2b') === true) return;
            checked++;
            problems.push(
              ...validator.problemsOf({
                method: req.method ?? 'GET',
                path: req.url ?? '/',
                requestHasBody: body.length > 0,
                requestContentType: req.headers['content-type'],
                status: answer.statusCode ?? 0,
                contentType: answer.headers['content-type'],
                body: Buffer.concat(kept),
                bodyComplete: size <= capturedBytes,
              }),
            );
          });
        },
      );
      forward.on('error', (error) => {
        problems.push(`${req.method} ${req.url}: the API did not answer (${error.message})`);
        res.destroy();
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    problems,
    checked: () => checked,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
