import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as z from 'zod';
import { redactSecrets } from '../../lib/redact.ts';

/**
 * Records what an adapter exchanged with a real provider (the live conformance runs), redacted, as a
 * fixture a replay test holds the provider's fake to. It wraps the `fetch` the adapter is given.
 *
 * Redaction, before anything reaches the file:
 * - the credentials the caller names, and every value the provider handed out as a credential (a JSON
 *   field or query parameter named like a token, key, secret, password or signature, a header so named),
 *   in every form lib/redact.ts knows (as sent, any case, URL- and JSON-escaped, hex, base64 at every
 *   alignment, also inside `Bearer …`, Basic pairs and longer values), in URLs, headers and bodies both
 *   ways, including bodies stored as base64;
 * - the values of credential-bearing headers, whatever they hold.
 * Binary bodies are kept as base64 (at most `maxBodyBytes`); text bodies as text.
 */
export const redacted = '<redacted>';
const maxBodyBytes = 256 * 1024;
const secretName =
  /(token|secret|password|passwd|api[-_]?key|signature|^sig$|credential|authorization|cookie)/i;
/** Headers worth keeping for a replay (the rest are hop-by-hop or per-deployment noise). */
const keptHeaders = new Set(['content-type', 'content-length', 'accept', 'location', 'retry-after']);

const bodySchema = z.union([
  z.object({ text: z.string() }),
  z.object({ base64: z.string(), truncated: z.boolean().optional() }),
]);
const messageSchema = z.object({
  headers: z.record(z.string(), z.string()),
  body: bodySchema.optional(),
});
export const exchangeSchema = z.object({
  request: messageSchema.extend({ method: z.string(), url: z.string() }),
  response: messageSchema.extend({ status: z.number().int() }),
});
export const recordingSchema = z.object({
  provider: z.string(),
  recordedAt: z.string(),
  /** The provider's base URL as the adapter was configured, redacted to its origin's role. */
  baseUrl: z.string(),
  exchanges: z.array(exchangeSchema),
});
export type Recording = z.infer<typeof recordingSchema>;
export type RecordedExchange = z.infer<typeof exchangeSchema>;

export class ExchangeRecorder {
  readonly #provider: string;
  readonly #baseUrl: string;
  readonly #secrets: string[];
  readonly #exchanges: { request: RawRequest; response: RawResponse }[] = [];
  readonly #inner: typeof fetch;

  /** `secrets`: the credentials the adapter was given. */
  constructor(options: { provider: string; baseUrl: string; secrets: string[]; fetch?: typeof fetch }) {
    this.#provider = options.provider;
    this.#baseUrl = options.baseUrl;
    this.#secrets = options.secrets.filter((s) => s.length > 0);
    this.#inner = options.fetch ?? fetch;
  }

  /** The fetch to give the adapter: it passes everything through and keeps a copy of each exchange. */
  readonly fetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const requestBody = request.body === null ? undefined : Buffer.from(await request.clone().arrayBuffer());
    const response = await this.#inner(request);
    // Read beside the adapter, not before it: a streamed answer reaches the adapter as it comes.
    const responseBody = response
      .clone()
      .arrayBuffer()
      .then((bytes) => Buffer.from(bytes))
      .catch(() => Buffer.alloc(0));
    this.#exchanges.push({
      request: {
        method: request.method,
        url: request.url,
        headers: headersOf(request.headers),
        body: requestBody,
      },
      response: { status: response.status, headers: headersOf(response.headers), body: responseBody },
    });
    return response;
  };

  /** The recording, redacted: credentials handed out by the provider are found first, then all removed. */
  async recording(): Promise<Recording> {
    const exchanges = await Promise.all(
      this.#exchanges.map(async ({ request, response }) => ({
        request,
        response: { ...response, body: await response.body },
      })),
    );
    const secrets = [...this.#secrets];
    for (const { request, response } of exchanges)
      for (const message of [request, response]) {
        for (const [name, value] of Object.entries(message.headers))
          if (secretName.test(name)) secrets.push(...credentialsIn(value));
        collectSecrets(message.body, secrets);
      }
    for (const { request } of exchanges)
      for (const [name, value] of new URL(request.url).searchParams)
        if (secretName.test(name)) secrets.push(value);
    const unique = [...new Set(secrets.filter((s) => s.length >= 4))];
    const clean = (text: string) => redactSecrets(text, unique);
    return recordingSchema.parse({
      provider: this.#provider,
      recordedAt: new Date().toISOString(),
      baseUrl: clean(this.#baseUrl),
      exchanges: exchanges.map(({ request, response }) => ({
        request: {
          method: request.method,
          url: clean(request.url),
          headers: cleanHeaders(request.headers, clean),
          ...(request.body !== undefined && { body: bodyOf(request.body, request.headers, clean) }),
        },
        response: {
          status: response.status,
          headers: cleanHeaders(response.headers, clean),
          ...(response.body.length > 0 && {
            body: bodyOf(response.body, response.headers, clean),
          }),
        },
      })),
    });
  }

  async save(file: string): Promise<void> {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(await this.recording(), null, 2)}\n`);
  }
}

interface RawRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Promise<Buffer>;
}

function headersOf(headers: Headers): Record<string, string> {
  return Object.fromEntries([...headers.entries()].map(([name, value]) => [name.toLowerCase(), value]));
}

/** A header's credential: the value, and what follows a scheme (`Bearer x`, Basic's decoded pair). */
function credentialsIn(value: string): string[] {
  const found = [value];
  const scheme = /^(\w+)\s+(.+)$/.exec(value);
  if (scheme?.[2] !== undefined) {
    found.push(scheme[2]);
    if (scheme[1]?.toLowerCase() === 'basic') {
      const pair = Buffer.from(scheme[2], 'base64').toString('utf8');
      found.push(pair, ...pair.split(':').slice(1));
    }
  }
  return found;
}

/** Values of JSON fields named like credentials, at any depth. */
function collectSecrets(body: Buffer | undefined, into: string[]): void {
  if (body === undefined || body.length === 0) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  const walk = (node: unknown) => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (typeof node === 'object' && node !== null)
      for (const [key, value] of Object.entries(node)) {
        if (secretName.test(key) && typeof value === 'string') into.push(value);
        else walk(value);
      }
  };
  walk(parsed);
}

function cleanHeaders(
  headers: Record<string, string>,
  clean: (text: string) => string,
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (secretName.test(name)) kept[name] = redacted;
    else if (keptHeaders.has(name) || name.startsWith('x-')) kept[name] = clean(value);
  }
  return kept;
}

function bodyOf(
  body: Buffer,
  headers: Record<string, string>,
  clean: (text: string) => string,
): z.infer<typeof bodySchema> {
  const kept = body.subarray(0, maxBodyBytes);
  const truncated = body.length > maxBodyBytes;
  const type = headers['content-type'] ?? '';
  const text = kept.toString('utf8');
  const isText =
    !truncated &&
    (/json|text|x-www-form-urlencoded|event-stream|ndjson/.test(type) || !text.includes('\uFFFD'));
  if (isText) return { text: clean(text) };
  // Bytes: redacted as latin1 text (every byte one character), so an ASCII credential inside is found.
  return {
    base64: Buffer.from(clean(kept.toString('latin1')), 'latin1').toString('base64'),
    ...(truncated && { truncated }),
  };
}
