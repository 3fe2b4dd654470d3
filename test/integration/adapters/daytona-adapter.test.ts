import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daytonaConfigSchema } from '../../../adapters/daytona/config.ts';
import { DaytonaAdapter, daytonaStateOf } from '../../../adapters/daytona/daytona-adapter.ts';
import { DaytonaFake } from '../../fakes/daytona-server.ts';
import { createRequest, failureOf, listedWhileFilterIgnored } from '../../helpers/adapter-calls.ts';

const request = (overrides: Record<string, unknown> = {}) =>
  createRequest(
    { installation: 'inst_dtn', resources: { cpu: 2, memoryMiB: 2048, diskGiB: 5 }, env: { A: '1' } },
    overrides,
  );

const failure = failureOf;

describe('the Daytona adapter', () => {
  let fake: DaytonaFake;
  let adapter: DaytonaAdapter;

  beforeAll(async () => {
    fake = await new DaytonaFake({ apiKey: 'dtn-key-0123456789' }).start();
    adapter = new DaytonaAdapter(
      daytonaConfigSchema.parse({ apiURL: `${fake.url}/api`, pollIntervalMs: 10, target: 'eu' }),
      'dtn-key-0123456789',
    );
  });

  afterAll(async () => {
    await fake.stop();
  });

  it.each([
    ['started', 'running'],
    ['stopped', 'stopped'],
    ['archived', 'stopped'],
    ['paused', 'paused'],
    ['error', 'error'],
    ['build_failed', 'error'],
    ['creating', 'pending'],
    ['snapshotting', 'pending'],
  ] as const)('maps state %s to %s', (state, expected) => {
    expect(daytonaStateOf(state)).toBe(expected);
  });

  it('sends no resources (the snapshot sizes the sandbox), autoStopInterval 0, the name and ownership labels', async () => {
    const req = request({ template: 'python-snapshot' });
    await adapter.create(req);
    expect(fake.received.createBodies.at(-1)).toEqual({
      name: req.id,
      snapshot: 'python-snapshot',
      env: { A: '1' },
      labels: { 'differently.dev/sandbox-id': req.id, 'differently.dev/installation': 'inst_dtn' },
      target: 'eu',
      autoStopInterval: 0,
    });
  });

  it('maps egress deny to networkBlockAll and an allow-list of IPv4 addresses and ranges to networkAllowList', async () => {
    const network = (egress: 'allow' | 'deny' | 'allowlist', allow: string[] = []) => ({
      egress,
      allow,
      denyAlways: ['169.254.0.0/16'],
      from: 'request' as const,
    });
    const denied = request({ network: network('deny') });
    await adapter.create(denied);
    expect(fake.received.createBodies.at(-1)).toMatchObject({ networkBlockAll: true });
    expect(fake.received.createBodies.at(-1)).not.toHaveProperty('networkAllowList');
    const listed = request({ network: network('allowlist', ['203.0.113.0/24', '198.51.100.7']) });
    const instance = await adapter.create(listed);
    expect(fake.received.createBodies.at(-1)).toMatchObject({
      networkAllowList: '203.0.113.0/24,198.51.100.7/32',
    });
    expect([...fake.sandboxes.values()].find((s) => s.id === instance.ref)?.networkAllowList).toBe(
      '203.0.113.0/24,198.51.100.7/32',
    );
    // What Daytona cannot take is refused before any call, naming why.
    for (const [policy, why] of [
      [network('allowlist', ['2001:db8::/32']), 'IPv4 addresses and CIDR blocks only'],
      [
        network(
          'allowlist',
          Array.from({ length: 11 }, (_, i) => `10.0.${i}.0/24`),
        ),
        'at most 10',
      ],
      [network('allow'), 'allow-list only'],
    ] as const) {
      expect(await failure(adapter.create(request({ network: policy })))).toMatchObject({
        code: 'unsupported_operation',
        details: { reason: expect.stringContaining(why) },
      });
    }
    expect((await adapter.capabilities()).features).toEqual(
      expect.arrayContaining(['network.egress.deny', 'network.egress.allowlist']),
    );
    expect((await adapter.capabilities()).features).not.toContain('network.egress.domains');
  });

  it("lists only this installation's sandboxes, also when the server ignores the filter", async () => {
    const { ours, listed } = await listedWhileFilterIgnored(adapter, fake, request);
    expect(listed).toEqual([ours]);
  });

  it('stays idempotent while the listing lags: Create looks up by name, not by the search index', async () => {
    fake.faults.listingLagMs = 60_000;
    try {
      const req = request();
      // The first answer is lost after Daytona created the sandbox; the listing does not show it yet.
      fake.faults.dropCreateResponse = true;
      expect((await failure(adapter.create(req))).code).toBe('provider_unavailable');
      const second = await adapter.create(req);
      const same = [...fake.sandboxes.values()].filter((s) => s.name === req.id);
      expect(same.map((s) => s.id)).toEqual([second.ref]);
      expect((await adapter.create(req)).ref).toBe(second.ref);
    } finally {
      fake.faults.listingLagMs = 0;
    }
  });

  it('refuses a snapshot that does not exist as invalid_request; a runner failure is sandbox_failed', async () => {
    expect((await failure(adapter.create(request({ template: 'missing-snapshot' })))).code).toBe(
      'invalid_request',
    );
    fake.faults.nextSandboxErrors = true;
    const failed = await failure(adapter.create(request()));
    expect(failed.code, failed.message).toBe('sandbox_failed');
    expect(failed.message).toMatch(/runner failed/);
  });

  it('keeps exec to its documented deviations: combined output, no stdin, 408 as a timeout', async () => {
    const sandbox = await adapter.create(request());
    const result = await adapter.exec(sandbox.ref, { command: 'echo out; echo err >&2; exit 2' });
    expect(result).toMatchObject({ exitCode: 2, stdout: 'out\nerr\n', stderr: '' });
    expect((await failure(adapter.exec(sandbox.ref, { command: 'cat', stdin: 'x' }))).code).toBe(
      'unsupported_operation',
    );
    expect((await adapter.exec(sandbox.ref, { command: 'sleep 5', timeoutSeconds: 1 })).timedOut).toBe(true);
    expect((await adapter.exec(sandbox.ref, { args: ['echo', 'a b'] })).stdout).toBe('a b\n');
  });

  it('makes start and stop idempotent, and pause unsupported for the container class', async () => {
    const sandbox = await adapter.create(request());
    await adapter.start(sandbox.ref);
    await adapter.stop(sandbox.ref);
    await adapter.stop(sandbox.ref);
    expect((await adapter.get(sandbox.ref)).state).toBe('stopped');
    expect((await failure(adapter.pause(sandbox.ref))).code).toBe('unsupported_operation');
    expect((await adapter.capabilities()).features).not.toContain('lifecycle.pause-resume');
  });

  it('deletes a snapshot by the id Daytona gave it (the name is only for lookup), and a gone one quietly', async () => {
    const sandbox = await adapter.create(request());
    const snapshot = await adapter.snapshot(sandbox.ref, 'disk');
    expect(fake.snapshots.has(snapshot.ref)).toBe(true);
    await adapter.deleteSnapshot(snapshot.ref);
    expect(fake.snapshots.has(snapshot.ref)).toBe(false);
    await expect(adapter.deleteSnapshot(snapshot.ref)).resolves.toBeUndefined();
  });

  it("maps the daemon's empty-bodied 404 on a missing file to not_found", async () => {
    const sandbox = await adapter.create(request());
    expect((await failure(adapter.readFile(sandbox.ref, '/work/none.txt'))).code).toBe('not_found');
  });

  it("runs interactive processes in Daytona's sessions: env and cwd, line input, SIGTERM, stdin closed, a second one apart", async () => {
    expect((await adapter.capabilities()).features).toContain('exec.stdin');
    expect((await adapter.capabilities()).features).not.toContain('exec.pty');
    const { ref } = await adapter.create(request());
    const repl = await adapter.startProcess(ref, {
      argv: [
        'sh',
        '-c',
        'echo "start $GREETING $(pwd)"; while IFS= read -r l; do echo "got:$l"; done; echo "eof"',
      ],
      shell: false,
      env: { GREETING: 'hi there' },
      cwd: '/work',
      timeoutSeconds: 60,
      tag: 'repl',
    });
    expect(repl).toMatchObject({ exitCode: null, stdinOpen: true, pty: null, tag: 'repl', cwd: '/work' });
    const sleeper = await adapter.startProcess(ref, {
      argv: ['trap "echo terminated; exit 7" TERM; while :; do sleep 0.05; done'],
      shell: true,
      env: {},
      timeoutSeconds: 60,
    });
    expect(sleeper.pid).not.toBe(repl.pid);
    // Input without a newline is delivered as a line (Daytona adds one).
    await adapter.writeStdin(ref, repl.pid, new TextEncoder().encode('one'));
    let seen = '';
    await expect
      .poll(async () => {
        seen += (await adapter.readProcessOutput(ref, repl.pid, 65_536)).events.map((e) => e.data).join('');
        return seen;
      })
      .toMatch(/start hi there \/.*work\n[\s\S]*got:one\n/);
    // What was read is not read again.
    expect((await adapter.readProcessOutput(ref, repl.pid, 65_536)).events).toEqual([]);
    await expect(adapter.writeStdin(ref, repl.pid, new Uint8Array([0xff, 0xfe]))).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await adapter.closeStdin(ref, repl.pid);
    let rest = '';
    expect(
      await adapter.attachProcess(ref, repl.pid, (event) => {
        rest += event.data;
      }),
    ).toBe(0);
    expect(rest).toBe('eof\n');
    expect((await adapter.listProcesses(ref)).find((p) => p.pid === repl.pid)).toMatchObject({
      exitCode: 0,
      stdinOpen: false,
    });
    await expect(adapter.writeStdin(ref, repl.pid, new TextEncoder().encode('x'))).rejects.toMatchObject({
      code: 'invalid_state',
    });
    await expect(adapter.resizeProcess(ref, sleeper.pid, { cols: 80, rows: 24 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(
      adapter.startProcess(ref, {
        argv: ['sh'],
        shell: false,
        env: {},
        timeoutSeconds: 60,
        pty: { cols: 80, rows: 24 },
      }),
    ).rejects.toMatchObject({ code: 'unsupported_operation' });
    const ended = adapter.attachProcess(ref, sleeper.pid, () => undefined);
    await adapter.signalProcess(ref, sleeper.pid, 'SIGTERM');
    expect(await ended).toBe(7);
    await expect(adapter.readProcessOutput(ref, 424_242, 10)).rejects.toMatchObject({ code: 'not_found' });
    await adapter.delete(ref);
  });
});
