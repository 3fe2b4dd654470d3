import { expect } from 'vitest';
import * as z from 'zod';

export const envelopeSchema = z.strictObject({
  error: z.strictObject({
    code: z.string(),
    message: z.string().min(1),
    details: z.record(z.string(), z.unknown()),
  }),
});

export interface Reply {
  status: number;
  body: unknown;
  text: string;
}

/** A minimal JSON client for tests that talk to the local runtime over real HTTP. */
export function client(baseUrl: string) {
  async function call(
    method: string,
    path: string,
    key?: string,
    body?: unknown,
    raw?: string,
  ): Promise<Reply> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(key !== undefined && { authorization: `Bearer ${key}` }),
        ...((body !== undefined || raw !== undefined) && { 'content-type': 'application/json' }),
      },
      ...(raw !== undefined ? { body: raw } : body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON; keep the text
    }
    return { status: response.status, body: parsed, text };
  }
  return {
    get: (path: string, key?: string) => call('GET', path, key),
    post: (path: string, key?: string, body?: unknown) => call('POST', path, key, body ?? {}),
    postRaw: (path: string, key: string | undefined, raw: string) => call('POST', path, key, undefined, raw),
    put: (path: string, key?: string, body?: unknown) => call('PUT', path, key, body ?? {}),
    patch: (path: string, key?: string, body?: unknown) => call('PATCH', path, key, body ?? {}),
    delete: (path: string, key?: string) => call('DELETE', path, key),
  };
}

/** Asserts an error reply: the status, the envelope shape, the code, and no stack trace. */
export function expectError(reply: Reply, status: number, code: string): z.infer<typeof envelopeSchema> {
  expect(reply.status, reply.text).toBe(status);
  const envelope = envelopeSchema.parse(reply.body);
  expect(envelope.error.code).toBe(code);
  expect(reply.text).not.toMatch(/\bat .+\.ts:\d+/);
  return envelope;
}

export async function waitFor<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  /** A safety net only: the wait ends when `done` holds. */
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
