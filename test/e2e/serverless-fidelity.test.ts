import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { createProtocolHandler } from '../../adapters/protocol/handler.ts';
import { type AdapterServer, startAdapterServer } from '../../adapters/protocol/server.ts';
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { errors } from '../../lib/errors.ts';
import { awsLimits } from '../../lib/limits.ts';
import { refreshPools } from '../../lib/scheduler/pool-refresh.ts';
import { snapshotSchema } from '../../lib/schemas/sandbox-operations.ts';
import { type SandboxView, sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { memoryStore } from '../../lib/store/memory.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { DaytonaFake } from '../fakes/daytona-server.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import { runCli } from '../helpers/cli.ts';
import { client, waitFor } from '../helpers/http-client.ts';

const token = 'fidelity-plugin-token-0123456789';

/** A free port on 127.0.0.1, for a plugin that must come back where it was. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A plugin speaking the adapter protocol over a fake backend that outlives the server (an outage). */
class Plugin {
  readonly backend = new FakeAdapter();
  readonly port: number;
  #server: AdapterServer | undefined;

  constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    this.#server = await startAdapterServer(createProtocolHandler(this.backend, { token }), {
      port: this.port,
    });
  }

  async down(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}

interface Setup {
  runtime: LocalRuntime;
  api: ReturnType<typeof client>;
  key: string;
  get(id: string): Promise<SandboxView>;
}

const started: { stop(): Promise<void> }[] = [];

afterEach(async () => {
  for (const each of started.splice(0).reverse()) await each.stop();
  delete process.env.FIDELITY_TOKEN;
  delete process.env.FIDELITY_OS_KEY;
  delete process.env.FIDELITY_DTN_KEY;
  delete process.env.FIDELITY_FS_KEY;
});

async function setup(
  config: Record<string, unknown>,
  options: Partial<LocalRuntimeOptions> = {},
): Promise<Setup> {
  const runtime = await startLocalRuntime({
    config: parseConfig({ devMode: true, ...config }),
    sweepIntervalSeconds: 0,
    reconcileIntervalSeconds: 0,
    poolRefreshIntervalSeconds: 0,
    ...options,
  });
  started.push(runtime);
  const api = client(runtime.url);
  const org = z
    .object({ id: z.string() })
    .parse((await api.post('/v1/admin/orgs', runtime.adminKey, { name: 'f' })).body);
  const key = z
    .object({ key: z.string() })
    .parse((await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 'f' })).body).key;
  const get = async (id: string) => sandboxSchema.parse((await api.get(`/v1/sandboxes/${id}`, key)).body);
  return { runtime, api, key, get };
}

function remotePool(plugin: Plugin) {
  process.env.FIDELITY_TOKEN = token;
  return {
    name: 'lab',
    adapter: 'remote',
    config: { endpoint: plugin.url },
    credentials: { env: 'FIDELITY_TOKEN' },
  };
}

describe('many containers, one truth', () => {
  it('a sandbox created during a backend outage waits (queued, not failed) while 3 provision containers take its retries, and runs once the backend is back', async () => {
    const plugin = new Plugin(await freePort());
    await plugin.up();
    started.push({ stop: () => plugin.down() });
    const s = await setup({ pools: [remotePool(plugin)] }, { containers: 3 });
    await plugin.down();
    const created = sandboxSchema.parse(
      (await s.api.post('/v1/sandboxes', s.key, { placement: { allowedPools: ['lab'] } })).body,
    );
    // The first attempt meets the outage; every later receive, on whichever container, sees the pool down.
    await waitFor(
      () => s.get(created.id),
      (sandbox) =>
        /waiting for a pool|unavailable/.test(sandbox.statusMessage ?? '') && sandbox.attempts === 1,
      'the first attempt to fail',
    );
    const provisions = () => Object.values(s.runtime.functions.provision.invocationsByContainer());
    await waitFor(
      async () => provisions(),
      (counts) => counts.filter((n) => n > 0).length >= 3,
      'retries on three provision containers',
      60_000,
    );
    const waiting = await s.get(created.id);
    expect(waiting).toMatchObject({ status: 'queued', attempts: 1 });
    expect(waiting.statusMessage).toMatch(/unavailable/);
    // Back up: the next probe (one container's pool-refresh) clears the mark for every container.
    await plugin.up();
    await refreshPools(s.runtime.plane);
    const running = await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.status === 'running' || sandbox.status === 'failed',
      'running',
      60_000,
    );
    expect(running).toMatchObject({ status: 'running', pool: 'lab', attempts: 1 });
  }, 120_000);

  it('a plugin that was down when the containers cold-started serves files and streamed exec once it is up, whichever container serves the call', async () => {
    const plugin = new Plugin(await freePort());
    started.push({ stop: () => plugin.down() });
    const s = await setup({ pools: [remotePool(plugin)] });
    // Cold-start both api containers and both streaming ones while the plugin is down.
    await Promise.all([1, 2, 3, 4].map(() => s.api.get('/v1/usage', s.key)));
    await Promise.all(
      [1, 2, 3].map(() =>
        s.api.post('/v1/sandboxes/sbx_01M8WE2RKQR7SVBTNKCC4WS8X7/exec', s.key, { command: 'x' }),
      ),
    );
    expect(s.runtime.functions.api.coldStarts).toBeGreaterThanOrEqual(2);
    expect(s.runtime.functions.apiStream.coldStarts).toBeGreaterThanOrEqual(2);
    await plugin.up();
    await refreshPools(s.runtime.plane);
    const created = sandboxSchema.parse(
      (
        await s.api.post('/v1/sandboxes', s.key, {
          placement: { allowedPools: ['lab'] },
          capabilities: ['files', 'exec.stream'],
        })
      ).body,
    );
    await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.status === 'running',
      'running',
    );
    for (let i = 0; i < 4; i++) {
      const put = await fetch(
        `${s.runtime.url}/v1/sandboxes/${created.id}/files/content?path=/work/${i}.txt`,
        {
          method: 'PUT',
          headers: { authorization: `Bearer ${s.key}` },
          body: `file ${i}`,
        },
      );
      expect(put.status, await put.text()).toBe(204);
      const read = await fetch(
        `${s.runtime.url}/v1/sandboxes/${created.id}/files/content?path=/work/${i}.txt`,
        {
          headers: { authorization: `Bearer ${s.key}` },
        },
      );
      expect(await read.text()).toBe(`file ${i}`);
      const stream = await fetch(`${s.runtime.url}/v1/sandboxes/${created.id}/exec?stream=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}` },
        body: JSON.stringify({ command: `streamed ${i}` }),
      });
      const lines = (await stream.text())
        .trim()
        .split('\n')
        .map((line): unknown => JSON.parse(line));
      expect(lines).toEqual([{ stream: 'stdout', data: `streamed ${i}\n` }, { exitCode: 0 }]);
    }
    // The calls were spread: every container served some, and each had started with the plugin down.
    expect(Object.values(s.runtime.functions.api.invocationsByContainer()).every((n) => n > 0)).toBe(true);
    expect(Object.values(s.runtime.functions.apiStream.invocationsByContainer()).every((n) => n > 0)).toBe(
      true,
    );
  }, 60_000);
});

describe('long operations never hold an API request', () => {
  it('a 60 s snapshot: the API answers 202 within the limit, the worker dies after the backend took it, and the retry records that same snapshot: ready, nothing left over', async () => {
    const backend = new FakeAdapter({ delaysMs: { snapshot: 60_000 } });
    // The worker "dies" at its first attempt to record the finished snapshot (after the backend made it).
    const store = memoryStore();
    const settle = store.settleSnapshot.bind(store);
    let killed = 0;
    store.settleSnapshot = async (...args) => {
      if (args[1].status === 'ready' && killed++ === 0) throw new Error('worker killed');
      return settle(...args);
    };
    const s = await setup(
      { pools: [{ name: 'slow', adapter: 'fake' }] },
      { adapters: { slow: backend }, store, queues: { operations: { visibilityTimeoutSeconds: 3 } } },
    );
    const created = sandboxSchema.parse(
      (await s.api.post('/v1/sandboxes', s.key, { placement: { allowedPools: ['slow'] } })).body,
    );
    await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.status === 'running',
      'running',
    );
    const asked = Date.now();
    const accepted = await s.api.post(`/v1/sandboxes/${created.id}/snapshots`, s.key, {});
    expect(Date.now() - asked).toBeLessThan(awsLimits.apiIntegrationTimeoutSeconds * 1000);
    expect(accepted.status, accepted.text).toBe(202);
    const creating = snapshotSchema.parse(accepted.body);
    expect(creating.status).toBe('creating');
    expect((await s.runtime.plane.store.getUsage(creating.orgId)).snapshots).toBe(1);
    // Deleting it while it is being taken is refused: its backend artefact may appear at any moment.
    expect((await s.api.delete(`/v1/snapshots/${creating.id}`, s.key)).status).toBe(409);
    const ready = await waitFor(
      async () => snapshotSchema.parse((await s.api.get(`/v1/snapshots/${creating.id}`, s.key)).body),
      (snapshot) => snapshot.status !== 'creating',
      'the snapshot to settle',
      120_000,
    );
    expect(ready.status).toBe('ready');
    expect(killed).toBe(2);
    expect(backend.snapshotCount()).toBe(1);
    expect((await s.runtime.plane.store.getUsage(creating.orgId)).snapshots).toBe(1);
  }, 150_000);

  it('a slow stop answers 202 with the record stopping, then the worker makes it stopped; a backend refusal within the wait is the error and the record keeps its status', async () => {
    const backend = new FakeAdapter({ delaysMs: { stop: 3000 } });
    const s = await setup(
      { pools: [{ name: 'slow', adapter: 'fake' }], api: { operationWaitSeconds: 1 } },
      { adapters: { slow: backend } },
    );
    const created = sandboxSchema.parse(
      (await s.api.post('/v1/sandboxes', s.key, { placement: { allowedPools: ['slow'] } })).body,
    );
    await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.status === 'running',
      'running',
    );
    const stop = await s.api.post(`/v1/sandboxes/${created.id}/stop`, s.key);
    expect(stop.status, stop.text).toBe(202);
    expect(sandboxSchema.parse(stop.body)).toMatchObject({
      status: 'stopping',
      operation: { action: 'stop', state: 'pending' },
    });
    // Still holding its quota while stopping; a second stop is refused (it is not running).
    expect((await s.api.post(`/v1/sandboxes/${created.id}/stop`, s.key)).status).toBe(409);
    const stopped = await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.status !== 'stopping',
      'stopped',
    );
    expect(stopped).toMatchObject({ status: 'stopped', operation: { action: 'stop', state: 'succeeded' } });
    backend.inject('start', { error: errors.sandboxFailed('host rebooting') });
    const refused = await s.api.post(`/v1/sandboxes/${created.id}/start`, s.key);
    expect(refused.status, refused.text).toBe(503);
    expect(await s.get(created.id)).toMatchObject({
      status: 'stopped',
      operation: { action: 'start', state: 'failed', error: { code: 'provider_unavailable' } },
    });
  }, 60_000);
});

describe('waiting for transitional states from the SDK and the CLI', () => {
  it('the SDK and the CLI wait through pausing, resuming and creating to the settled record', async () => {
    const backend = new FakeAdapter({ delaysMs: { pause: 2500, resume: 2500, snapshot: 2500 } });
    const s = await setup(
      { pools: [{ name: 'slow', adapter: 'fake' }], api: { operationWaitSeconds: 0.5 } },
      { adapters: { slow: backend } },
    );
    const tenant = new DifferentlyClient({ endpoint: s.runtime.url, apiKey: s.key });
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['slow'] } })).id,
      { intervalMs: 50 },
    );
    expect((await tenant.pause(sandbox.id)).status).toBe('pausing');
    expect((await tenant.waitUntilSettled(sandbox.id, { intervalMs: 50 })).status).toBe('paused');
    expect((await tenant.resume(sandbox.id, { wait: true })).status).toBe('running');
    const snapshot = await tenant.createSnapshot(sandbox.id, 'disk', { wait: true });
    expect(snapshot.status).toBe('ready');
    const cliRun = await runCli(['sandboxes', 'pause', sandbox.id, '--wait', '--json'], {
      DIFFERENTLY_ENDPOINT: s.runtime.url,
      DIFFERENTLY_API_KEY: s.key,
    });
    expect(cliRun.code, cliRun.stderr).toBe(0);
    expect(sandboxSchema.parse(JSON.parse(cliRun.stdout)).status).toBe('paused');
    expect(cliRun.stderr).toContain(`${sandbox.id} is pausing; waiting for it to settle`);
  }, 60_000);
});

describe("OpenSandbox readiness within the scheduler's time", () => {
  it('a sandbox not ready before the provision timeout is sandbox_failed: the attempt counts and the pool stays healthy', async () => {
    const server = new OpenSandboxFake({ apiKey: 'os-ready-key-0123456789' });
    await server.start();
    started.push(server);
    process.env.FIDELITY_OS_KEY = 'os-ready-key-0123456789';
    const s = await setup({
      // The adapter would wait 180 s; the scheduler allows 5.
      pools: [
        {
          name: 'os',
          adapter: 'opensandbox',
          trust: 'private',
          config: { apiURL: server.url, pollIntervalMs: 10, readyTimeoutSeconds: 180 },
          credentials: { env: 'FIDELITY_OS_KEY' },
        },
      ],
      scheduler: { provisionTimeoutSeconds: 5 },
    });
    server.faults.neverReady = true;
    const created = sandboxSchema.parse(
      (await s.api.post('/v1/sandboxes', s.key, { placement: { allowedPools: ['os'] } })).body,
    );
    const retried = await waitFor(
      () => s.get(created.id),
      (sandbox) => sandbox.attempts === 1 || sandbox.status === 'failed',
      'the first attempt to end',
      30_000,
    );
    expect(retried).toMatchObject({ status: 'queued', attempts: 1 });
    expect(retried.statusMessage).toMatch(/sandbox failed on os: opensandbox: .*(not ready|gave up)/);
    // Not the pool's fault: no down mark, healthy for everyone.
    expect(
      (await s.runtime.plane.store.listPoolViews()).find((view) => view.pool === 'os')?.downSince ?? null,
    ).toBe(null);
    await s.runtime.plane.pools.sync(true);
    expect(s.runtime.plane.pools.health('os')).toEqual({ healthy: true, reason: null });
    delete process.env.FIDELITY_OS_KEY;
  }, 60_000);
});

describe('API Gateway and Lambda limits', () => {
  const eightMiB = 8 * 1024 * 1024;
  const bigOutput = `head -c ${eightMiB} /dev/zero | tr '\\0' a`;

  /** On each pool: a sandbox, an 8 MiB sync exec bounded, then deleted. */
  async function expectBoundedOn(s: Setup, pools: string[]): Promise<void> {
    for (const pool of pools) {
      const created = sandboxSchema.parse(
        (await s.api.post('/v1/sandboxes', s.key, { placement: { allowedPools: [pool] } })).body,
      );
      await waitFor(
        () => s.get(created.id),
        (sandbox) => sandbox.status === 'running',
        `${pool} running`,
      );
      await expectBoundedExec(s, created.id);
      await s.api.delete(`/v1/sandboxes/${created.id}`, s.key);
    }
  }

  async function expectBoundedExec(s: Setup, sandboxId: string): Promise<void> {
    const response = await fetch(`${s.runtime.url}/v1/sandboxes/${sandboxId}/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: bigOutput }),
    });
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    expect(Buffer.byteLength(text)).toBeLessThan(awsLimits.maxBufferedResponseBytes);
    const result = z.object({ stdout: z.string(), truncated: z.boolean() }).parse(JSON.parse(text));
    expect(result.truncated).toBe(true);
    expect(Buffer.byteLength(result.stdout)).toBe(1024 * 1024);
    expect(result.stdout.startsWith('aaaa')).toBe(true);
  }

  it('an 8 MiB stdout through sync exec on devhost, fake and remote stays under the response limit and says truncated', async () => {
    const eight = 'a'.repeat(eightMiB);
    const bigExec = () => ({
      exitCode: 0,
      stdout: eight,
      stderr: '',
      durationMs: 1,
      truncated: false,
      timedOut: false,
    });
    const plugin = new Plugin(await freePort());
    (plugin.backend as unknown as { exec: FakeAdapter['exec'] }).exec = async () => bigExec();
    await plugin.up();
    started.push({ stop: () => plugin.down() });
    const s = await setup(
      {
        pools: [
          { name: 'local', adapter: 'devhost', config: { root: `/tmp/differently-fidelity-${process.pid}` } },
          { name: 'big', adapter: 'fake' },
          remotePool(plugin),
        ],
      },
      { adapters: { big: new FakeAdapter({ exec: bigExec }) } },
    );
    await expectBoundedOn(s, ['local', 'big', 'lab']);
  }, 90_000);

  it('an 8 MiB stdout through sync exec on the OpenSandbox, Daytona and Freestyle fakes stays under the limit and says truncated', async () => {
    const fakes = {
      os: new OpenSandboxFake({ apiKey: 'os-fidelity-key-0123456789' }),
      dtn: new DaytonaFake(),
      fs: new FreestyleFake(),
    };
    await Promise.all(Object.values(fakes).map((fake) => fake.start()));
    started.push({
      stop: async () => void (await Promise.all(Object.values(fakes).map((fake) => fake.stop()))),
    });
    process.env.FIDELITY_OS_KEY = 'os-fidelity-key-0123456789';
    // The Daytona and Freestyle fakes take any key; their pools must name one.
    process.env.FIDELITY_DTN_KEY = 'dtn-fidelity-key-0123456789';
    process.env.FIDELITY_FS_KEY = 'fs-fidelity-key-0123456789';
    const s = await setup({
      pools: [
        {
          name: 'os',
          adapter: 'opensandbox',
          trust: 'private',
          config: { apiURL: fakes.os.url, pollIntervalMs: 10 },
          credentials: { env: 'FIDELITY_OS_KEY' },
        },
        {
          name: 'dtn',
          adapter: 'daytona',
          config: { apiURL: `${fakes.dtn.url}/api`, pollIntervalMs: 10 },
          credentials: { env: 'FIDELITY_DTN_KEY' },
        },
        {
          name: 'fs',
          adapter: 'freestyle',
          config: { apiURL: fakes.fs.url, pollIntervalMs: 10 },
          credentials: { env: 'FIDELITY_FS_KEY' },
        },
      ],
      policy: { allowExternal: true, externalPools: ['dtn', 'fs'] },
    });
    await expectBoundedOn(s, ['os', 'dtn', 'fs']);
    delete process.env.FIDELITY_OS_KEY;
  }, 120_000);

  it('refuses a config whose exec output cap could exceed the response limit', () => {
    expect(() => parseConfig({ api: { execOutputMaxBytes: 4 * 1024 * 1024 } })).toThrow(
      /execOutputMaxBytes.*6291456/,
    );
  });
});
