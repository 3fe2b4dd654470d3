import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import type { LocalRuntime } from '../../infra/local/runtime.ts';
import type { ExecEvent } from '../../lib/adapter/port.ts';
import { errors } from '../../lib/errors.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError } from '../helpers/http-client.ts';

const lineSchema = z.union([
  z.strictObject({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.strictObject({ exitCode: z.number() }),
  z.strictObject({ error: z.strictObject({ code: z.string(), message: z.string() }) }),
]);

describe('streamed exec (?stream=1) over HTTP on the local runtime', () => {
  const fake = new FakeAdapter();
  const buffered = new FakeAdapter();
  let e: E2e;
  let runtime: LocalRuntime;
  let api: E2e['api'];
  let key: string;

  beforeAll(async () => {
    e = await startE2e({
      fakes: { fake: { adapter: fake }, buffered: { adapter: buffered, features: ['exec'] } },
    });
    ({ runtime, api, key } = e);
  });

  afterAll(async () => {
    await e?.stop();
  });

  const _get = (id: string, as?: string) => e.get(id, as);
  const running = (pool: string, extra: Record<string, unknown> = {}, as?: string) =>
    e.running(pool, extra, as);

  /** Reads the NDJSON stream line by line, keeping only counts for big stdout so memory stays small. */
  async function stream(id: string, body: unknown) {
    const response = await fetch(`${runtime.url}/v1/sandboxes/${id}/exec?stream=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const lines: z.infer<typeof lineSchema>[] = [];
    let stdoutBytes = 0;
    let buffer = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body ?? []) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const text = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf('\n');
        if (text === '') continue;
        const line = lineSchema.parse(JSON.parse(text));
        if ('stream' in line && line.stream === 'stdout') stdoutBytes += Buffer.byteLength(line.data);
        if ('stream' in line && line.data.length > 64 * 1024) continue;
        lines.push(line);
      }
    }
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      lines,
      stdoutBytes,
      rest: buffer,
    };
  }

  const joined = (lines: z.infer<typeof lineSchema>[], which: 'stdout' | 'stderr') =>
    lines.map((l) => ('stream' in l && l.stream === which ? l.data : '')).join('');
  const finals = (lines: z.infer<typeof lineSchema>[]) => lines.filter((l) => !('stream' in l));

  it('streams interleaved stdout and stderr, each complete in order, ending in exactly one exit code', async () => {
    const s = await running('local');
    const result = await stream(s.id, {
      command: 'for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.05; done; exit 4',
    });
    expect(result.status).toBe(200);
    expect(result.type).toBe('application/x-ndjson');
    expect(joined(result.lines, 'stdout')).toBe('out1\nout2\nout3\n');
    expect(joined(result.lines, 'stderr')).toBe('err1\nerr2\nerr3\n');
    expect(finals(result.lines)).toEqual([{ exitCode: 4 }]);
    expect(result.lines.at(-1)).toEqual({ exitCode: 4 });
    expect(result.rest).toBe('');
  });

  it('streams 100 MiB completely, while the synchronous exec truncates it with bounded memory', async () => {
    const s = await running('local');
    const command = 'head -c 104857600 /dev/zero | tr "\\0" x';
    const streamed = await stream(s.id, { command });
    expect(streamed.stdoutBytes).toBe(104_857_600);
    expect(finals(streamed.lines)).toEqual([{ exitCode: 0 }]);

    const before = process.memoryUsage().rss;
    const sync = await api.post(`/v1/sandboxes/${s.id}/exec`, key, { command });
    const result = z
      .object({ stdout: z.string(), truncated: z.boolean(), exitCode: z.number() })
      .parse(sync.body);
    expect(result.truncated).toBe(true);
    expect(result.stdout.length).toBe(1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
  }, 120_000);

  it('falls back to one buffered stdout and stderr line when the pool does not stream', async () => {
    const s = await running('buffered');
    buffered.setExec(() => ({
      exitCode: 2,
      stdout: 'all at once\n',
      stderr: 'oops\n',
      durationMs: 1,
      truncated: false,
      timedOut: false,
    }));
    const result = await stream(s.id, { command: 'anything' });
    expect(result.lines).toEqual([
      { stream: 'stdout', data: 'all at once\n' },
      { stream: 'stderr', data: 'oops\n' },
      { exitCode: 2 },
    ]);
  });

  it('ends with an {"error"} line when the backend dies mid-stream, never a silent hang', async () => {
    const s = await running('fake');
    const original = fake.execStream.bind(fake);
    fake.execStream = async (_ref: string, _req: unknown, emit: (event: ExecEvent) => void) => {
      emit({ stream: 'stdout', data: 'partial output\n' });
      throw errors.providerUnavailable('backend connection lost');
    };
    try {
      const result = await stream(s.id, { command: 'long job' });
      expect(result.status).toBe(200);
      expect(result.lines).toEqual([
        { stream: 'stdout', data: 'partial output\n' },
        { error: { code: 'provider_unavailable', message: 'backend connection lost' } },
      ]);
      // An unexpected failure is masked as the buffered answer's 500 would be: no internals leak.
      fake.execStream = async () => {
        throw new Error('ECONNRESET at /opt/internal/worker.js:42');
      };
      const masked = await stream(s.id, { command: 'long job' });
      expect(masked.lines).toEqual([{ error: { code: 'internal', message: 'internal error' } }]);
    } finally {
      fake.execStream = original;
    }
  });

  it('refuses before the first byte: a wrong state is 409, a timeout past the stream limit 400', async () => {
    const s = await running('fake');
    const post = (body: unknown) =>
      fetch(`${runtime.url}/v1/sandboxes/${s.id}/exec?stream=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown, text: '' }));
    expectError(await post({ command: 'x', timeoutSeconds: 3600 }), 400, 'invalid_request');
    await api.post(`/v1/sandboxes/${s.id}/pause`, key);
    const refused = expectError(await post({ command: 'x' }), 409, 'invalid_state');
    expect(refused.error.details).toEqual({ status: 'paused' });
  });
});
