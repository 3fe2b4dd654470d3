import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freestyleConfigSchema } from '../../../adapters/freestyle/config.ts';
import {
  envScript,
  FreestyleAdapter,
  freestyleStateOf,
  powerOfTwoAtLeast,
  slugOf,
} from '../../../adapters/freestyle/freestyle-adapter.ts';
import { FreestyleFake } from '../../fakes/freestyle-server.ts';
import { createRequest, failureOf, listedWhileFilterIgnored } from '../../helpers/adapter-calls.ts';

const request = (overrides: Record<string, unknown> = {}) =>
  createRequest(
    {
      installation: 'inst_fs',
      resources: { cpu: 3, memoryMiB: 6000, diskGiB: 20 },
      env: { GREETING: "it's here" },
      ttlSeconds: 900,
    },
    overrides,
  );

const failure = failureOf;

describe('Freestyle mappings', () => {
  it('derives a valid, stable slug from the sandbox id', () => {
    const id = 'sbx_01KBXYZ0123456789ABCDEFGHJ';
    expect(slugOf(id)).toBe('dly-sbx-01kbxyz0123456789abcdefghj');
    expect(slugOf(id)).toMatch(/^[a-z0-9-]{1,63}$/);
  });

  it.each([
    ['running', 'running'],
    ['paused', 'paused'],
    ['stopped', 'stopped'],
    ['starting', 'pending'],
    ['pausing', 'pending'],
  ] as const)('maps %s to %s', (state, expected) => {
    expect(freestyleStateOf(state)).toBe(expected);
  });

  it('rounds cpu and memory up to powers of two', () => {
    expect([1, 2, 3, 5, 6000].map(powerOfTwoAtLeast)).toEqual([1, 2, 4, 8, 8192]);
  });

  it('writes env as single-quoted exports', () => {
    expect(envScript({ A: "it's", B: '$HOME' })).toBe(`export A='it'\\''s'\nexport B='$HOME'\n`);
  });
});

describe('the Freestyle adapter against its fake server', () => {
  let fake: FreestyleFake;
  let adapter: FreestyleAdapter;

  beforeAll(async () => {
    fake = await new FreestyleFake({ apiKey: 'fs-key-0123456789' }).start();
    adapter = new FreestyleAdapter(
      freestyleConfigSchema.parse({ apiURL: fake.url, pollIntervalMs: 10 }),
      'fs-key-0123456789',
    );
  });

  afterAll(async () => {
    await fake.stop();
  });

  it("lists only this installation's sandboxes, also when the server ignores the filter", async () => {
    const { ours, listed } = await listedWhileFilterIgnored(adapter, fake, request);
    expect(listed).toEqual([ours]);
  });

  it('creates through the background protocol with a closed firewall, grows the VM, and writes the env file', async () => {
    fake.faults.flakyPoll = true; // one poll hop fails transiently: retried, not fatal
    const req = request();
    const vm = await adapter.create(req);
    expect(fake.received.createBodies.at(-1)).toMatchObject({
      slug: slugOf(req.id),
      snapshotId: 'freestyle/ubuntu-sm',
      firewall: { rules: [] },
      ttlSeconds: 900,
      metadata: { 'dly-sandbox-id': req.id, 'dly-installation': 'inst_fs' },
    });
    // ubuntu-sm is 2 cpu / 4096 MiB / 16384 MiB: cpu grows to 4, memory to 8192, storage to 20 GiB.
    expect(fake.received.resizeBodies.at(-1)).toEqual({ cpu: 4, memory: 8192, storage: 20_480 });
    expect((await adapter.exec(vm.ref, { command: 'echo "$GREETING"' })).stdout).toBe("it's here\n");
    expect(
      (await adapter.exec(vm.ref, { command: 'echo "$GREETING"', env: { GREETING: 'exec wins' } })).stdout,
    ).toBe('exec wins\n');
  });

  it('opens outbound traffic only with egress: public', async () => {
    const open = new FreestyleAdapter(
      freestyleConfigSchema.parse({ apiURL: fake.url, pollIntervalMs: 10, egress: 'public' }),
      'fs-key-0123456789',
    );
    expect(open.createBody(request())).toMatchObject({
      firewall: { rules: [{ action: 'allow', source: {}, destination: { public: true } }] },
    });
  });

  it('resolves a taken slug to the existing VM, and a 409 for anything else to insufficient_capacity', async () => {
    const req = request();
    const first = await adapter.create(req);
    // A retry whose first answer was lost: the slug is ours.
    expect((await adapter.create(req)).ref).toBe(first.ref);
    const other = request();
    fake.faults.failCreate = { status: 409, code: 'CONFLICT' };
    expect((await failure(adapter.create(other))).code).toBe('insufficient_capacity');
  });

  it('sends stdin as base64, caps the timeout at 300 s, reports a null statusCode as a timeout', async () => {
    const vm = await adapter.create(request());
    fake.received.execBodies.length = 0;
    expect((await adapter.exec(vm.ref, { command: 'cat', stdin: 'piped bytes' })).stdout).toBe('piped bytes');
    expect(fake.received.execBodies.at(-1)).toMatchObject({
      stdin: Buffer.from('piped bytes').toString('base64'),
      timeoutMs: 300_000,
    });
    await adapter.exec(vm.ref, { command: 'true', timeoutSeconds: 7200 });
    expect(fake.received.execBodies.at(-1)).toMatchObject({ timeoutMs: 300_000 });
    const slow = await adapter.exec(vm.ref, { command: 'sleep 5', timeoutSeconds: 1 });
    expect(slow).toMatchObject({ timedOut: true, exitCode: 124 });
  });

  it('stops with poweroff and starts again; pauses and resumes with start', async () => {
    const vm = await adapter.create(request());
    await adapter.stop(vm.ref);
    expect((await adapter.get(vm.ref)).state).toBe('stopped');
    await adapter.start(vm.ref);
    expect((await adapter.get(vm.ref)).state).toBe('running');
    await adapter.pause(vm.ref);
    expect((await adapter.get(vm.ref)).state).toBe('paused');
    await adapter.resume(vm.ref);
    expect((await adapter.get(vm.ref)).state).toBe('running');
  });

  it('reports every snapshot as memory, exposes ports as public TLS rules, and moves the ttl with PATCH', async () => {
    const vm = await adapter.create(request());
    expect((await adapter.snapshot(vm.ref, 'disk')).kind).toBe('memory');
    const url = await adapter.exposePort(vm.ref, 8080);
    expect(url).toMatch(/^https:\/\/8080-dly-sbx-[a-z0-9-]+\.style\.dev$/);
    expect(fake.tlsRules.at(-1)).toMatchObject({
      source: { public: true },
      destination: { vmId: vm.ref, port: 8080 },
    });
    await adapter.extendTtl(vm.ref, 3600);
    expect(fake.vms.get(vm.ref)?.ttlSeconds).toBeGreaterThanOrEqual(3600);
  });

  it('writes files over 8 MiB through the resumable upload, checked by sha256, and reads them back outside the background protocol', async () => {
    const vm = await adapter.create(request());
    const big = new Uint8Array(9 * 1024 * 1024 + 17).map((_, i) => i % 251);
    await adapter.writeFile(vm.ref, '/work/big.bin', big);
    expect(
      Buffer.compare(Buffer.from(await adapter.readFile(vm.ref, '/work/big.bin')), Buffer.from(big)),
    ).toBe(0);
    expect(fake.uploads.size).toBe(0);
  });
});
