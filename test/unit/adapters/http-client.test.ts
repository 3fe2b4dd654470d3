import { describe, expect, it } from 'vitest';
import { HttpClient } from '../../../adapters/httpx/http-client.ts';

/** A fetch that answers from a script and counts its calls. */
function scripted(...answers: (Response | Error)[]) {
  let calls = 0;
  const fetchImpl = (async () => {
    const answer = answers[Math.min(calls, answers.length - 1)];
    calls++;
    if (answer instanceof Error) throw answer;
    return answer?.clone() ?? new Response('', { status: 500 });
  }) as typeof fetch;
  return { fetchImpl, calls: () => calls };
}

const client = (fetchImpl: typeof fetch) =>
  new HttpClient({
    provider: 'test',
    baseUrl: 'http://provider.invalid',
    fetch: fetchImpl,
    secrets: ['k3y-s3cret'],
    retries: 2,
  });

describe('the provider HTTP layer', () => {
  it('retries an idempotent call after 503 and transport errors, and gives up after its retries', async () => {
    const flaky = scripted(
      new Response('', { status: 503 }),
      new TypeError('socket hang up'),
      new Response('{"ok":true}', { status: 200 }),
    );
    expect(await (await client(flaky.fetchImpl).request('GET', '/x', { idempotent: true })).json()).toEqual({
      ok: true,
    });
    expect(flaky.calls()).toBe(3);
    const down = scripted(new Response('', { status: 503 }));
    await expect(client(down.fetchImpl).request('GET', '/x', { idempotent: true })).rejects.toMatchObject({
      code: 'provider_unavailable',
    });
    expect(down.calls()).toBe(3);
  });

  it('never retries a call that is not idempotent (a create could run twice)', async () => {
    const flaky = scripted(new Response('', { status: 503 }), new Response('{}', { status: 200 }));
    await expect(client(flaky.fetchImpl).request('POST', '/create', { json: {} })).rejects.toMatchObject({
      code: 'provider_unavailable',
    });
    expect(flaky.calls()).toBe(1);
    const lost = scripted(new TypeError('connection reset'), new Response('{}', { status: 200 }));
    await expect(client(lost.fetchImpl).request('POST', '/create', { json: {} })).rejects.toMatchObject({
      code: 'provider_unavailable',
    });
    expect(lost.calls()).toBe(1);
  });

  it('does not retry answers that will not change: 400, 404, 409', async () => {
    for (const status of [400, 404, 409]) {
      const once = scripted(new Response('{"code":"X","message":"no"}', { status }));
      await expect(client(once.fetchImpl).request('GET', '/x', { idempotent: true })).rejects.toBeDefined();
      expect(once.calls(), String(status)).toBe(1);
    }
  });

  it('keeps the provider code, redacted, and the status in details', async () => {
    const answer = scripted(
      new Response('{"code":"BAD_k3y-s3cret","message":"the key k3y-s3cret is wrong"}', { status: 400 }),
    );
    const error = await client(answer.fetchImpl)
      .request('GET', '/x')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'invalid_request',
      details: { status: 400, providerCode: 'BAD_[redacted]' },
    });
    expect((error as Error).message).not.toContain('k3y-s3cret');
  });

  it('bounds a call by the caller: a cancelled call is provider_unavailable "cancelled", not retried', async () => {
    const slow = (async (_url: unknown, init?: RequestInit) =>
      new Promise<Response>((_, reject) =>
        init?.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
      )) as typeof fetch;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    await expect(
      client(slow).request('GET', '/x', { idempotent: true, signal: controller.signal }),
    ).rejects.toMatchObject({
      code: 'provider_unavailable',
      message: expect.stringMatching(/cancelled/),
    });
  });
});
