/**
 * The shared HTTP layer of provider adapters (adapter specification section 5): one status mapping,
 * timeouts bounded by the caller, retries only for idempotent calls, and credentials that never appear
 * in an error. The provider's own error code is kept in details.providerCode.
 */

import { ApiError, type ErrorCode, errors } from '../../lib/errors.ts';
import { redactSecrets } from '../../lib/redact.ts';
import type * as z from '../../lib/zod.ts';
import { maxJsonAnswerBytes, readBounded } from './bounded-body.ts';
import { sleep } from './sleep.ts';

export interface HttpClientOptions {
  /** Names the provider in messages: `opensandbox`, `daytona`, `freestyle`. */
  provider: string;
  baseUrl: string;
  /** Sent on every request (the credential header among them). */
  headers?: Record<string, string>;
  /** Values that must never appear in an error message (the credential). */
  secrets?: string[];
  /** Per-request bound; the caller's signal applies first. */
  timeoutMs?: number;
  /** Attempts for idempotent requests after a transport error or a 502/503/504. */
  retries?: number;
  fetch?: typeof fetch;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | string[] | undefined>;
  json?: unknown;
  raw?: Uint8Array | FormData;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Safe to send again (GET, DELETE, PUT and lookups). POST creates are not, unless they say so. */
  idempotent?: boolean;
  /** Treat these statuses as success (e.g. 404 on a delete). */
  accept?: number[];
  /** A full URL instead of baseUrl + path (execd, toolbox proxies). */
  url?: string;
}

/** Maps a provider's HTTP status to the contract's code (httpx in the seeds). */
export function codeForStatus(status: number): ErrorCode {
  if (status === 404) return 'not_found';
  if (status === 429) return 'insufficient_capacity';
  if (status === 409) return 'invalid_state';
  if (status === 400 || status === 422) return 'invalid_request';
  return 'provider_unavailable';
}

/** The `{code, message}`-ish fields providers put in error bodies (each names them a little differently). */
export function providerErrorOf(body: unknown): { code?: string; message?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const record = body as Record<string, unknown>;
  const nested =
    typeof record.error === 'object' && record.error !== null
      ? (record.error as Record<string, unknown>)
      : undefined;
  const pick = (...values: unknown[]) => values.find((v): v is string => typeof v === 'string' && v !== '');
  const detail = Array.isArray(record.detail) ? JSON.stringify(record.detail).slice(0, 500) : undefined;
  return {
    ...(pick(record.code, nested?.code) !== undefined && { code: pick(record.code, nested?.code) }),
    ...(pick(
      record.message,
      nested?.message,
      typeof record.error === 'string' ? record.error : undefined,
      detail,
    ) !== undefined && {
      message: pick(
        record.message,
        nested?.message,
        typeof record.error === 'string' ? record.error : undefined,
        detail,
      ),
    }),
  };
}

export class HttpClient {
  readonly #options: HttpClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: HttpClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  get provider(): string {
    return this.#options.provider;
  }

  /** Removes any credential from a text that may reach a message or a log. */
  redact(text: string): string {
    return redactSecrets(text, this.#options.secrets ?? []);
  }

  url(path: string, query: RequestOptions['query'] = {}, base = this.#options.baseUrl): string {
    const url = new URL(`${base.replace(/\/+$/, '')}${path}`);
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const each of value) url.searchParams.append(key, each);
      else url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  /** One call; a non-2xx (outside `accept`) becomes the contract's error. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const attempts = options.idempotent === true ? 1 + (this.#options.retries ?? 2) : 1;
    let last: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      // Backing off, but never past the caller's cancellation.
      if (attempt > 0) await sleep(100 * 2 ** attempt, options.signal);
      try {
        const response = await this.#once(method, path, options);
        if (response.ok || options.accept?.includes(response.status)) return response;
        const error = await this.#errorOf(method, path, response);
        if (attempts > attempt + 1 && [502, 503, 504].includes(response.status)) {
          last = error;
          continue;
        }
        throw error;
      } catch (error) {
        if (error instanceof ApiError && !(error.details.transport === true)) throw error;
        last = error;
        if (options.signal?.aborted === true) break;
      }
    }
    throw last;
  }

  /** A JSON answer checked against `schema`: garbage, truncation or a missing field is provider_unavailable. */
  async json<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    options: RequestOptions = {},
  ): Promise<z.infer<S>> {
    const response = await this.request(method, path, options);
    return this.parse(response, schema, `${method} ${path}`);
  }

  async parse<S extends z.ZodMiniType>(response: Response, schema: S, what: string): Promise<z.infer<S>> {
    const text = (await readBounded(response, maxJsonAnswerBytes, what)).toString('utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw this.unavailable(`${what} answered ${response.status} with a body that is not JSON`, {
        status: response.status,
      });
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      throw this.unavailable(`${what} answered ${response.status} without the expected fields`, {
        status: response.status,
        issues: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`),
      });
    }
    return parsed.data;
  }

  unavailable(message: string, details: Record<string, unknown> = {}): ApiError {
    return errors.providerUnavailable(`${this.#options.provider}: ${this.redact(message)}`, {
      provider: this.#options.provider,
      ...details,
    });
  }

  async #once(method: string, path: string, options: RequestOptions): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 60_000);
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
    const body =
      options.json !== undefined
        ? JSON.stringify(options.json)
        : options.raw !== undefined
          ? options.raw
          : undefined;
    try {
      return await this.#fetch(options.url ?? this.url(path, options.query), {
        method,
        signal,
        headers: {
          ...this.#options.headers,
          ...(options.json !== undefined && { 'content-type': 'application/json' }),
          ...(options.raw instanceof Uint8Array && { 'content-type': 'application/octet-stream' }),
          ...options.headers,
        },
        ...(body !== undefined && { body }),
      });
    } catch (error) {
      const reason = signal.aborted
        ? options.signal?.aborted === true
          ? 'the call was cancelled'
          : 'the call timed out'
        : (error as Error).message;
      throw errors.providerUnavailable(
        `${this.#options.provider}: ${method} ${path} failed: ${this.redact(reason)}`,
        {
          provider: this.#options.provider,
          transport: true,
        },
      );
    }
  }

  async #errorOf(method: string, path: string, response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const { code: providerCode, message } = providerErrorOf(body);
    const details = {
      provider: this.#options.provider,
      status: response.status,
      ...(providerCode !== undefined && { providerCode: this.redact(providerCode) }),
    };
    if (response.status === 401 || response.status === 403) {
      // Never the key, never the provider's message (it may quote the header back).
      return errors.providerUnavailable(
        `${this.#options.provider}: the credentials were rejected (${response.status})`,
        details,
      );
    }
    const code = codeForStatus(response.status);
    const said =
      message === undefined ? `status ${response.status}` : `${message} (status ${response.status})`;
    return new ApiError(code, `${this.#options.provider}: ${method} ${path}: ${this.redact(said)}`, details);
  }
}
