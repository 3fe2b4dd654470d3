import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * Interactive processes over REST on the local runtime (two containers per function, a devhost pool and
 * a fake pool without the features): the attach is held by the streaming function while every input
 * goes through the buffered one's containers, so nothing relies on the container that started it.
 */
const processSchema = z.object({
  pid: z.number(),
  exitCode: z.number().nullable(),
  stdinOpen: z.boolean(),
  pty: z.object({ cols: z.number(), rows: z.number() }).nullable(),
});
const lineSchema = z.union([
  z.strictObject({ process: processSchema.passthrough() }),
  z.strictObject({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.strictObject({ exitCode: z.number() }),
  z.strictObject({ detached: z.object({ reason: z.string() }) }),
  z.strictObject({ error: z.object({ code: z.string(), message: z.string() }) }),
]);
type Line = z.infer<typeof lineSchema>;

describe('interactive processes over REST', () => {
  let e: E2e;
  const logLines: string[] = [];
  let sandboxId: string;

  beforeAll(async () => {
    const capture = (level: string) => (message: string, extra?: Record<string, unknown>) => {
      logLines.push(`${level} ${message} ${JSON.stringify(extra ?? {})}`);
    };
    e = await startE2e({
      fakes: { plain: { adapter: new FakeAdapter(), features: ['exec', 'exec.stream'] } },
      log: { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') },
    });
    sandboxId = (await e.running('local')).id;
  }, 60_000);

  afterAll(async () => {
    await e?.stop();
  });

  const path = (rest = '') => `/v1/sandboxes/${sandboxId}/processes${rest}`;

  /** Attaches and collects lines as they arrive; `lines` grows while the stream is open. */
  function attach(pid: number) {
    const lines: Line[] = [];
    const done = (async () => {
      const response = await fetch(`${e.runtime.url}${path(`/${pid}/attach`)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${e.key}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('application/x-ndjson');
      let buffer = '';
      const decoder = new TextDecoder();
      for await (const chunk of response.body ?? []) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const text = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (text !== '') lines.push(lineSchema.parse(JSON.parse(text)));
        }
      }
      return lines;
    })();
    const output = () => lines.map((line) => ('stream' in line ? line.data : '')).join('');
    return { lines, done, output };
  }

  it('starts a process, feeds it through every api container while one stream attaches, and ends it', async () => {
    const started = await e.api.post(path(), e.key, {
      command: 'while read -r line; do echo "got:$line"; done; echo bye; exit 4',
    });
    expect(started.status).toBe(201);
    const { pid } = processSchema.parse(started.body);
    const before = Object.values(e.runtime.functions.api.invocationsByContainer());
    const attached = attach(pid);
    for (const word of ['one', 'two', 'three', 'four']) {
      expect((await e.api.post(path(`/${pid}/stdin`), e.key, { data: `${word}\n` })).status).toBe(204);
    }
    await expect.poll(attached.output, { timeout: 15_000 }).toContain('got:four');
    // Each api container took some of the input (consecutive calls go to different containers).
    const after = Object.values(e.runtime.functions.api.invocationsByContainer());
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(after.every((count, index) => count > (before[index] ?? 0))).toBe(true);
    expect((await e.api.post(path(`/${pid}/stdin`), e.key, { close: true })).status).toBe(204);
    const lines = await attached.done;
    expect(lines[0]).toMatchObject({ process: { pid, exitCode: null } });
    expect(attached.output()).toBe('got:one\ngot:two\ngot:three\ngot:four\nbye\n');
    expect(lines.at(-1)).toEqual({ exitCode: 4 });
    // Ended: listed with its exit code for a while; input is refused clearly, never hangs.
    expect((await e.api.get(path(`/${pid}`), e.key)).body).toMatchObject({ exitCode: 4, stdinOpen: false });
    const refused = await e.api.post(path(`/${pid}/stdin`), e.key, { data: 'late\n' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: { code: 'invalid_state', message: expect.stringMatching(/exited with code 4/) },
    });
    // Attaching to an ended process answers its exit at once.
    expect(await attach(pid).done).toEqual([
      expect.objectContaining({ process: expect.anything() }),
      { exitCode: 4 },
    ]);
  });

  it('runs python3 -i in a terminal, read back without attaching (what MCP reads), and resizes it', async () => {
    const started = await e.api.post(path(), e.key, {
      args: ['python3', '-i', '-q'],
      pty: { cols: 80, rows: 24 },
    });
    expect(started.status).toBe(201);
    const { pid } = processSchema.parse(started.body);
    await e.api.post(path(`/${pid}/stdin`), e.key, { data: 'import shutil\nx = 6 * 7\n' });
    await e.api.post(path(`/${pid}/resize`), e.key, { cols: 132, rows: 50 });
    await e.api.post(path(`/${pid}/stdin`), e.key, {
      dataBase64: Buffer.from('print(x, tuple(shutil.get_terminal_size()))\n').toString('base64'),
    });
    let seen = '';
    await expect
      .poll(
        async () => {
          const read = await e.api.get(path(`/${pid}/output`), e.key);
          expect(read.status).toBe(200);
          seen += z.object({ stdout: z.string() }).parse(read.body).stdout;
          return seen;
        },
        { timeout: 15_000 },
      )
      .toMatch(/42 \(132, 50\)/);
    expect((await e.api.get(path(), e.key)).body).toMatchObject({
      items: expect.arrayContaining([expect.objectContaining({ pid, pty: { cols: 132, rows: 50 } })]),
    });
    expect((await e.api.post(path(`/${pid}/signal`), e.key, { signal: 'SIGKILL' })).status).toBe(204);
    await expect
      .poll(async () => processSchema.parse((await e.api.get(path(`/${pid}`), e.key)).body).exitCode)
      .toBe(137);
  });

  it('keeps a password typed into a terminal out of logs, audit, events and process listings', async () => {
    const password = `pw-${crypto.randomUUID()}`;
    const started = await e.api.post(path(), e.key, {
      command:
        'stty -echo; echo "Password:"; read -r secret; stty echo; printf "length %s\\n" "$(printf %s "$secret" | wc -c)"',
      pty: { cols: 80, rows: 24 },
    });
    expect(started.status).toBe(201);
    const { pid } = processSchema.parse(started.body);
    let seen = '';
    const output = async () => {
      const read = await e.api.get(path(`/${pid}/output`), e.key);
      seen += z.object({ stdout: z.string() }).parse(read.body).stdout;
      return seen;
    };
    // The terminal echoes nothing once the prompt is out (as `sudo` or `ssh` would ask).
    await expect.poll(output, { timeout: 15_000 }).toContain('Password:');
    // Typed as a person would (in pieces), once as text and once base64-encoded.
    await e.api.post(path(`/${pid}/stdin`), e.key, { data: password.slice(0, 10) });
    await e.api.post(path(`/${pid}/stdin`), e.key, {
      dataBase64: Buffer.from(`${password.slice(10)}\n`).toString('base64'),
    });
    await expect.poll(output, { timeout: 15_000 }).toContain(`length ${password.length}`);
    const listed = JSON.stringify([
      (await e.api.get(path(), e.key)).body,
      (await e.api.get(path(`/${pid}`), e.key)).body,
    ]);
    const store = e.runtime.plane.store;
    const { orgId } = z
      .object({ orgId: z.string() })
      .parse((await e.api.get(`/v1/sandboxes/${sandboxId}`, e.key)).body);
    await store.linkAudit(orgId);
    const audit = JSON.stringify((await store.listAudit(orgId, { limit: 1000 })).items);
    const events = JSON.stringify(e.runtime.events);
    expect(audit).toContain(sandboxId);
    const encodings = [
      password,
      Buffer.from(password).toString('base64'),
      Buffer.from(password.slice(10)).toString('base64').slice(0, 12),
    ];
    for (const where of [logLines.join('\n'), audit, events, listed, seen])
      for (const encoded of encodings) expect(where).not.toContain(encoded);
  });

  it('refuses bad input and unknown processes with clear errors', async () => {
    expect((await e.api.post(path(), e.key, {})).status).toBe(400);
    expect((await e.api.post(path(), e.key, { command: 'true', pty: { cols: 0, rows: 10 } })).status).toBe(
      400,
    );
    expect((await e.api.post(path('/4242/stdin'), e.key, { data: 'x' })).status).toBe(404);
    expect((await e.api.post(path('/4242/stdin'), e.key, {})).status).toBe(400);
    const tooMuch = await e.api.post(path('/1/stdin'), e.key, { data: 'x'.repeat(64 * 1024 + 1) });
    expect(tooMuch.status).toBe(400);
    expect((await e.api.post(path('/1/signal'), e.key, { signal: 'SIGSEGV' })).status).toBe(400);
    expect((await e.api.get(path('/4242'), e.key)).status).toBe(404);
    // Another org's key sees no such sandbox.
    const other = await e.api.post('/v1/admin/orgs', e.runtime.adminKey, { name: 'processes-other' });
    const otherKey = z
      .object({ key: z.string() })
      .parse(
        (
          await e.api.post(
            `/v1/admin/orgs/${z.object({ id: z.string() }).parse(other.body).id}/keys`,
            e.runtime.adminKey,
            { name: 'k' },
          )
        ).body,
      ).key;
    expect((await e.api.get(path(), otherKey)).status).toBe(404);
  });

  it('places a sandbox that asks for exec.pty only where it exists; elsewhere a process is 501 with the reason', async () => {
    const plain = await e.running('plain');
    const refused = await e.api.post(`/v1/sandboxes/${plain.id}/processes`, e.key, { command: 'cat' });
    expect(refused.status).toBe(501);
    expect(refused.body).toMatchObject({
      error: { code: 'unsupported_operation', details: { feature: 'exec.stdin', pool: 'plain' } },
    });
    const asked = await e.api.post('/v1/sandboxes', e.key, {
      capabilities: ['exec.pty'],
      placement: { allowedPools: ['plain'] },
    });
    expect(asked.status).toBeGreaterThanOrEqual(400);
    const placed = await e.api.post('/v1/sandboxes', e.key, { capabilities: ['exec.stdin', 'exec.pty'] });
    const id = z.object({ id: z.string() }).parse(placed.body).id;
    expect((await e.until(id, 'running')).pool).toBe('local');
  });

  it('is served by the TS SDK: start, attach while writing, detach and attach again, signal', async () => {
    const client = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
    const { pid } = await client.startProcess(sandboxId, { command: 'cat' });
    await client.writeStdin(sandboxId, pid, 'first\n');
    let seen = '';
    // Breaking out of the loop ends the stream: a detach.
    for await (const line of client.attachProcess(sandboxId, pid)) {
      if ('stream' in line) seen += line.data;
      if (seen.includes('first')) break;
    }
    expect(seen).toBe('first\n');
    // The server sees the stream end (what was printed to a gone stream would be lost with it).
    await expect.poll(async () => (await client.getProcess(sandboxId, pid)).attached).toBe(0);
    // Detached, it runs on; what it prints meanwhile waits for the next attach.
    await client.writeStdin(sandboxId, pid, new TextEncoder().encode('second\n'));
    const lines = [];
    for await (const line of client.attachProcess(sandboxId, pid)) {
      lines.push(line);
      // Signalled only once cat has echoed: a SIGTERM sent right after the write can beat cat's read.
      if ('stream' in line && line.data.includes('second'))
        await client.signalProcess(sandboxId, pid, 'SIGTERM');
    }
    expect(lines.slice(1)).toEqual([{ stream: 'stdout', data: 'second\n' }, { exitCode: 143 }]);
    expect((await client.listProcesses(sandboxId)).items.find((p) => p.pid === pid)).toMatchObject({
      exitCode: 143,
    });
    await expect(client.writeStdin(sandboxId, pid, 'x')).rejects.toMatchObject({ code: 'invalid_state' });
  });
});
