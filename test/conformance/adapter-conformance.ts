/**
 * The adapter conformance suite (adapter specification section 11, backlog E0.34) as a reusable module:
 * give it a harness for any adapter and it checks the contract the control plane relies on. It runs in
 * CI against fake, devhost, remote-over-fake and each provider adapter against its fake server; a plugin
 * author runs it against their own server (docs/adapters.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExecEvent,
  type ExecutionAdapter,
  isFileSystem,
  isLifecycle,
  isPauser,
  isPortExposer,
  isSnapshotter,
  isStreamer,
} from '../../lib/adapter/port.ts';
import { isProcessHost } from '../../lib/adapter/processes.ts';
import { newId } from '../../lib/ids.ts';
import type { ExecRequest } from '../../lib/schemas/sandboxes.ts';

export type FailureKind = 'capacity' | 'sandbox' | 'outage';

export interface ConformanceHarness {
  adapter: ExecutionAdapter;
  /** The features the pool advertises (effective). Declared features must work; others must be refused. */
  features: string[];
  /** A directory commands may use as cwd and files may live in. */
  workdir: string;
  /** What `pwd` prints in `workdir` (default: exactly `workdir`; devhost maps it under its root). */
  pwd?: RegExp;
  /** Documented deviations (adapter specification section 9), checked as documented instead of as standard. */
  deviations?: {
    /** stdin is refused with unsupported_operation (Daytona). */
    stdinUnsupported?: boolean;
    /** stderr comes back in stdout (Daytona). */
    combinedOutput?: boolean;
    /** File listings carry names and the directory flag only, sizes 0 (Freestyle). */
    listingsWithoutSize?: boolean;
  };
  /** The backend acts on the next Create but its answer is lost on the way back. */
  loseNextCreateResponse?(): void;
  /** The next List fails part-way (a page, a node). */
  failNextList?(): void;
  /** The next Create fails with this kind of failure. */
  failNextCreate?(kind: FailureKind): void;
  /** The same backend seen with a credential it rejects, and that credential (never to be echoed). */
  withBadCredentials?(): { adapter: ExecutionAdapter; credential: string };
  /** The backend stops accepting work, and comes back. */
  breakBackend?(): void;
  restoreBackend?(): void;
  /** Removes what the harness started (servers, directories). */
  close?(): Promise<void>;
}

export interface ConformanceOptions {
  /** Per-call timeout for slow real backends. */
  timeoutMs?: number;
}

const resources = { cpu: 1, memoryMiB: 512, diskGiB: 1 };

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return (error as { code?: string }).code ?? `thrown: ${(error as Error).message}`;
  }
}

export function adapterConformance(
  name: string,
  setup: () => Promise<ConformanceHarness>,
  options: ConformanceOptions = {},
): void {
  describe(`adapter conformance: ${name}`, { timeout: options.timeoutMs ?? 30_000 }, () => {
    let h: ConformanceHarness;
    const installation = newId('installation');
    const created: string[] = [];

    const create = async (overrides: Partial<Parameters<ExecutionAdapter['create']>[0]> = {}) => {
      const instance = await h.adapter.create({
        id: newId('sandbox'),
        installation,
        resources,
        env: { CONFORMANCE_BASE: 'base' },
        labels: {},
        ttlSeconds: 600,
        ...overrides,
      });
      created.push(instance.ref);
      return instance;
    };
    let running: Awaited<ReturnType<typeof create>>;
    const has = (feature: string) => h.features.includes(feature);
    const exec = (request: ExecRequest) => h.adapter.exec(running.ref, request);

    beforeAll(async () => {
      h = await setup();
      running = await create();
    });

    afterAll(async () => {
      for (const ref of created) await h?.adapter.delete(ref).catch(() => undefined);
      await h?.close?.();
    });

    it('answers info, capabilities, capacity and health', async () => {
      expect(h.adapter.info().protocol).toBe('1');
      const capabilities = await h.adapter.capabilities();
      expect(capabilities.features.length).toBeGreaterThan(0);
      const capacity = await h.adapter.capacity();
      expect(typeof capacity.bounded).toBe('boolean');
      await expect(h.adapter.health()).resolves.toBeUndefined();
    });

    it('creates idempotently: the same id twice is one instance with one ref', async () => {
      const id = newId('sandbox');
      const first = await create({ id });
      const second = await create({ id });
      expect(second.ref).toBe(first.ref);
      expect(second.sandboxId).toBe(id);
      const listed = (await h.adapter.list(installation)).filter((i) => i.sandboxId === id);
      expect(listed.map((i) => i.ref)).toEqual([first.ref]);
    });

    it('creates idempotently when the first answer was lost', async (context) => {
      if (h.loseNextCreateResponse === undefined) return context.skip('the harness cannot lose a response');
      const id = newId('sandbox');
      h.loseNextCreateResponse();
      await expect(create({ id })).rejects.toBeDefined();
      const retried = await create({ id });
      const listed = (await h.adapter.list(installation)).filter((i) => i.sandboxId === id);
      expect(listed.map((i) => i.ref)).toEqual([retried.ref]);
    });

    it('deletes idempotently: a missing ref is success, and Get of it is not_found', async () => {
      const instance = await create();
      await h.adapter.delete(instance.ref);
      await expect(h.adapter.delete(instance.ref)).resolves.toBeUndefined();
      expect(await codeOf(h.adapter.get(instance.ref))).toBe('not_found');
    });

    it("lists exactly the installation's instances, each with its sandboxId", async () => {
      const other = newId('installation');
      const mine = await create();
      const theirs = await create({ installation: other });
      const listed = await h.adapter.list(installation);
      const refs = listed.map((i) => i.ref);
      expect(refs).toContain(mine.ref);
      expect(refs).toContain(running.ref);
      expect(refs).not.toContain(theirs.ref);
      expect(listed.find((i) => i.ref === mine.ref)?.sandboxId).toBe(mine.sandboxId);
      expect((await h.adapter.list(other)).map((i) => i.ref)).toEqual([theirs.ref]);
      await h.adapter.delete(theirs.ref);
    });

    it('fails a List rather than returning part of it', async (context) => {
      if (h.failNextList === undefined) return context.skip('the harness cannot break a List');
      h.failNextList();
      await expect(h.adapter.list(installation)).rejects.toBeDefined();
      expect((await h.adapter.list(installation)).length).toBeGreaterThan(0);
    });

    it('returns a non-zero exit as a result, not an error', async () => {
      const result = await exec({ command: 'exit 3' });
      expect(result.exitCode).toBe(3);
    });

    it('honours cwd and env (the sandbox env and the exec env)', async () => {
      const cwd = await exec({ command: 'pwd', cwd: h.workdir });
      if (h.pwd === undefined) expect(cwd.stdout.trim()).toBe(h.workdir);
      else expect(cwd.stdout.trim()).toMatch(h.pwd);
      const env = await exec({
        command: 'echo "$CONFORMANCE_VAR $CONFORMANCE_BASE"',
        env: { CONFORMANCE_VAR: 'v1' },
      });
      expect(env.stdout.trim()).toBe('v1 base');
    });

    it('passes stdin, or refuses it as documented', async () => {
      if (h.deviations?.stdinUnsupported === true) {
        expect(await codeOf(exec({ command: 'cat', stdin: 'hello' }))).toBe('unsupported_operation');
        return;
      }
      expect((await exec({ command: 'cat', stdin: 'hello\n' })).stdout).toBe('hello\n');
    });

    it('separates stdout and stderr, or combines them as documented', async () => {
      const result = await exec({ command: 'echo out; echo err >&2' });
      if (h.deviations?.combinedOutput === true) expect(result.stdout).toMatch(/out[\s\S]*err|err[\s\S]*out/);
      else expect([result.stdout, result.stderr]).toEqual(['out\n', 'err\n']);
    });

    it('stops a command at its timeout and says so', async () => {
      const result = await exec({ command: 'sleep 30', timeoutSeconds: 1 });
      expect(result.timedOut).toBe(true);
    });

    it('streams output as events and ends with the exit code (when exec.stream is declared)', async () => {
      if (!has('exec.stream')) {
        if (isStreamer(h.adapter)) {
          const code = await codeOf(h.adapter.execStream(running.ref, { command: 'true' }, () => undefined));
          expect(code).toBe('unsupported_operation');
        }
        return;
      }
      if (!isStreamer(h.adapter))
        throw new Error('exec.stream is declared but the adapter has no execStream');
      const events: ExecEvent[] = [];
      const exitCode = await h.adapter.execStream(running.ref, { command: 'echo a; exit 4' }, (e) => {
        events.push(e);
      });
      expect(exitCode).toBe(4);
      expect(
        events
          .filter((e) => e.stream === 'stdout')
          .map((e) => e.data)
          .join(''),
      ).toBe('a\n');
    });

    it('reads, writes and lists files (when files is declared)', async () => {
      if (!has('files')) {
        if (isFileSystem(h.adapter))
          expect(await codeOf(h.adapter.listFiles(running.ref, h.workdir))).toBe('unsupported_operation');
        return;
      }
      if (!isFileSystem(h.adapter)) throw new Error('files is declared but the adapter has no file system');
      const path = `${h.workdir}/conformance.txt`;
      const bytes = new Uint8Array([0, 1, 2, 255, 10]);
      await h.adapter.writeFile(running.ref, path, bytes);
      expect(Array.from(await h.adapter.readFile(running.ref, path))).toEqual(Array.from(bytes));
      const listed = await h.adapter.listFiles(running.ref, h.workdir);
      expect(listed.find((f) => f.name === 'conformance.txt')).toMatchObject({
        isDir: false,
        size: h.deviations?.listingsWithoutSize === true ? 0 : 5,
      });
      expect(await codeOf(h.adapter.readFile(running.ref, `${h.workdir}/absent.txt`))).toBe('not_found');
    });

    it("restores a snapshot's data through fromSnapshot (when snapshots.disk and files are declared)", async () => {
      if (!has('snapshots.disk')) {
        if (isSnapshotter(h.adapter))
          expect(await codeOf(h.adapter.snapshot(running.ref, 'disk'))).toBe('unsupported_operation');
        return;
      }
      if (!isSnapshotter(h.adapter))
        throw new Error('snapshots.disk is declared but the adapter has no Snapshotter');
      if (has('files') && isFileSystem(h.adapter)) {
        await h.adapter.writeFile(running.ref, `${h.workdir}/kept.txt`, new TextEncoder().encode('kept'));
      }
      const snapshot = await h.adapter.snapshot(running.ref, 'disk');
      expect(snapshot.ref.length).toBeGreaterThan(0);
      const restored = await create({ fromSnapshot: snapshot.ref });
      if (has('files') && isFileSystem(h.adapter)) {
        const text = new TextDecoder().decode(
          await h.adapter.readFile(restored.ref, `${h.workdir}/kept.txt`),
        );
        expect(text).toBe('kept');
      }
      await h.adapter.delete(restored.ref);
      await h.adapter.deleteSnapshot(snapshot.ref);
      await expect(h.adapter.deleteSnapshot(snapshot.ref)).resolves.toBeUndefined();
    });

    it('stops and starts, pauses and resumes, exposes ports: each only when declared', async () => {
      const instance = await create();
      if (has('lifecycle.stop-start') && isLifecycle(h.adapter)) {
        await h.adapter.stop(instance.ref);
        expect((await h.adapter.get(instance.ref)).state).toBe('stopped');
        await h.adapter.start(instance.ref);
        expect((await h.adapter.get(instance.ref)).state).toBe('running');
      } else if (isLifecycle(h.adapter)) {
        expect(await codeOf(h.adapter.stop(instance.ref))).toBe('unsupported_operation');
      }
      if (has('lifecycle.pause-resume') && isPauser(h.adapter)) {
        await h.adapter.pause(instance.ref);
        expect((await h.adapter.get(instance.ref)).state).toBe('paused');
        await h.adapter.resume(instance.ref);
        expect((await h.adapter.get(instance.ref)).state).toBe('running');
      } else if (isPauser(h.adapter)) {
        expect(await codeOf(h.adapter.pause(instance.ref))).toBe('unsupported_operation');
      }
      if (has('ports.expose') && isPortExposer(h.adapter)) {
        expect(await h.adapter.exposePort(instance.ref, 8080)).toMatch(/^https?:\/\//);
      } else if (isPortExposer(h.adapter)) {
        expect(await codeOf(h.adapter.exposePort(instance.ref, 8080))).toBe('unsupported_operation');
      }
      await h.adapter.delete(instance.ref);
    });

    it('runs interactive processes: input after start, read back, resized, signalled, clear errors after (when exec.stdin and exec.pty are declared)', async () => {
      const host = h.adapter;
      if (!isProcessHost(host)) return;
      const cat = { argv: ['cat'], shell: false, env: {}, timeoutSeconds: 60 };
      if (!has('exec.stdin')) {
        expect(await codeOf(host.startProcess(running.ref, cat))).toBe('unsupported_operation');
        return;
      }
      const started = await host.startProcess(running.ref, cat);
      expect(started).toMatchObject({ exitCode: null, stdinOpen: true, pty: null });
      await host.writeStdin(running.ref, started.pid, new TextEncoder().encode('first line\n'));
      let seen = '';
      await expect
        .poll(async () => {
          const output = await host.readProcessOutput(running.ref, started.pid, 64 * 1024);
          seen += output.events.map((event) => event.data).join('');
          return seen;
        })
        .toContain('first line');
      expect((await host.listProcesses(running.ref)).map((process) => process.pid)).toContain(started.pid);
      // A detach leaves it running; what it prints meanwhile waits for the next attach.
      const detach = new AbortController();
      let live = '';
      const first = host.attachProcess(
        running.ref,
        started.pid,
        (event) => {
          live += event.data;
          if (live.includes('second line')) detach.abort();
        },
        { signal: detach.signal },
      );
      await host.writeStdin(running.ref, started.pid, new TextEncoder().encode('second line\n'));
      expect(await first).toBeUndefined();
      // Over a network the backend learns of the detach when it sees the connection close.
      await expect
        .poll(
          async () => (await host.listProcesses(running.ref)).find((p) => p.pid === started.pid)?.attached,
          { timeout: 10_000 },
        )
        .toBe(0);
      await host.writeStdin(running.ref, started.pid, new TextEncoder().encode('third line\n'));
      await host.closeStdin(running.ref, started.pid);
      let later = '';
      const collect = (event: { data: string }) => {
        later += event.data;
      };
      expect(await host.attachProcess(running.ref, started.pid, collect)).toBe(0);
      expect(later).toContain('third line');
      expect(later).not.toContain('second line');
      expect(await codeOf(host.writeStdin(running.ref, started.pid, new Uint8Array([65])))).toBe(
        'invalid_state',
      );
      expect(await codeOf(host.writeStdin(running.ref, 999_999, new Uint8Array([65])))).toBe('not_found');
      if (!has('exec.pty')) return;
      const terminal = await host.startProcess(running.ref, { ...cat, pty: { cols: 80, rows: 24 } });
      await host.resizeProcess(running.ref, terminal.pid, { cols: 100, rows: 30 });
      expect(
        (await host.listProcesses(running.ref)).find((process) => process.pid === terminal.pid),
      ).toMatchObject({
        pty: { cols: 100, rows: 30 },
      });
      const ended = host.attachProcess(running.ref, terminal.pid, () => undefined);
      await host.signalProcess(running.ref, terminal.pid, 'SIGKILL');
      expect(await ended).toBe(137);
    });

    it("classifies Create failures: capacity, one sandbox's failure, outage", async (context) => {
      if (h.failNextCreate === undefined) return context.skip('the harness cannot inject Create failures');
      const expected = {
        capacity: 'insufficient_capacity',
        sandbox: 'sandbox_failed',
        outage: 'provider_unavailable',
      };
      for (const [kind, code] of Object.entries(expected) as [FailureKind, string][]) {
        h.failNextCreate(kind);
        expect(await codeOf(create()), kind).toBe(code);
      }
    });

    it('reports rejected credentials as provider_unavailable without echoing them', async (context) => {
      if (h.withBadCredentials === undefined) return context.skip('the backend takes no credentials');
      const { adapter, credential } = h.withBadCredentials();
      const error = await adapter.health().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as { code?: string }).code).toBe('provider_unavailable');
      expect(
        JSON.stringify({
          message: (error as Error).message,
          details: (error as { details?: unknown }).details,
        }),
      ).not.toContain(credential);
    });

    it('fails Health when the backend cannot accept work', async (context) => {
      if (h.breakBackend === undefined) return context.skip('the harness cannot break the backend');
      h.breakBackend();
      try {
        await expect(h.adapter.health()).rejects.toBeDefined();
      } finally {
        h.restoreBackend?.();
      }
      await expect(h.adapter.health()).resolves.toBeUndefined();
    });
  });
}
