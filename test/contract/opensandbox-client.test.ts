import { join } from 'node:path';
import { ConnectionConfig, Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import {
  openSandboxExecdContract,
  openSandboxLifecycleContract,
} from '../fixtures/opensandbox-response-schemas.ts';
import { OpenApiValidator, providerSpecsFolder } from '../helpers/openapi-validator.ts';

const specs = providerSpecsFolder();

/**
 * OpenSandbox's own published client (@alibaba-group/opensandbox, pinned) against the fake, for every
 * operation the adapter uses: create and ready (the SDK polls execd's ping), exec, files, list by
 * metadata, pause/resume, renew, snapshots, delete. A fake answering what the official client cannot
 * read fails here, whatever the adapter makes of it.
 */
/** A wait on the fake's state: it ends when the state is reached; the bound is only a safety net. */
const settled = { timeout: 20_000, interval: 20 };

describe('the OpenSandbox fake, as the official client reads it', () => {
  const fake = new OpenSandboxFake({ apiKey: 'k-contract' });
  let connectionConfig: ConnectionConfig;
  let sandbox: Sandbox;

  beforeAll(async () => {
    await fake.start();
    fake.recording = true;
    connectionConfig = new ConnectionConfig({ domain: fake.url, apiKey: 'k-contract' });
    sandbox = await Sandbox.create({
      connectionConfig,
      image: 'ubuntu:24.04',
      entrypoint: ['tail', '-f', '/dev/null'],
      resource: { cpu: '500m', memory: '512Mi' },
      env: { GREETING: 'hello' },
      metadata: { team: 'contract' },
      timeoutSeconds: 600,
      readyTimeoutSeconds: 60,
      healthCheckPollingInterval: 20,
    });
  });
  afterAll(async () => {
    await connectionConfig?.closeTransport();
    await fake.stop();
  });

  it('creates a sandbox and waits for it to be ready', async () => {
    const info = await sandbox.getInfo();
    expect(info.id).toBe(sandbox.id);
    expect(info.status.state).toBe('Running');
    expect(info.metadata).toEqual({ team: 'contract' });
    expect(info.expiresAt).toBeInstanceOf(Date);
  });

  it('runs a command and reads its output and exit', async () => {
    const ok = await sandbox.commands.run('echo "$GREETING" out; echo err >&2');
    expect(ok.logs.stdout.map((m) => m.text).join('')).toContain('hello out');
    expect(ok.logs.stderr.map((m) => m.text).join('')).toContain('err');
    expect(ok.error).toBeUndefined();
    const failed = await sandbox.commands.run('exit 3');
    expect(failed.error?.value).toBe('3');
  });

  it('writes, reads and lists files', async () => {
    await sandbox.files.writeFiles([{ path: '/work/notes.txt', data: 'contract text' }]);
    expect(await sandbox.files.readFile('/work/notes.txt')).toBe('contract text');
    const entries = await sandbox.files.listDirectory({ path: '/work' });
    expect(entries.map((e) => e.path)).toContain('/work/notes.txt');
  });

  it('lists sandboxes by metadata', async () => {
    const manager = SandboxManager.create({ connectionConfig });
    const found = await manager.listSandboxInfos({ metadata: { team: 'contract' } });
    expect(found.items.map((s) => s.id)).toEqual([sandbox.id]);
    expect(found.pagination?.totalItems).toBe(1);
    const none = await manager.listSandboxInfos({ metadata: { team: 'nobody' } });
    expect(none.items).toEqual([]);
  });

  it('renews the expiration', async () => {
    const before = (await sandbox.getInfo()).expiresAt as Date;
    const renewed = await sandbox.renew(3600);
    expect(new Date(String(renewed.expiresAt)).getTime()).toBeGreaterThan(before.getTime());
  });

  it('pauses and resumes', async () => {
    await sandbox.pause();
    await expect.poll(async () => (await sandbox.getInfo()).status.state, settled).toBe('Paused');
    sandbox = await sandbox.resume({ readyTimeoutSeconds: 60, healthCheckPollingInterval: 20 });
    expect((await sandbox.getInfo()).status.state).toBe('Running');
  });

  it('takes a snapshot, starts from it and deletes it', async () => {
    const manager = SandboxManager.create({ connectionConfig });
    const created = await manager.createSnapshot(sandbox.id);
    await expect
      .poll(async () => (await manager.getSnapshot(created.id)).status.state, settled)
      .toBe('Ready');
    const restored = await Sandbox.create({
      connectionConfig,
      snapshotId: created.id,
      readyTimeoutSeconds: 60,
      healthCheckPollingInterval: 20,
    });
    expect(await restored.files.readFile('/work/notes.txt')).toBe('contract text');
    await restored.kill();
    await manager.deleteSnapshot(created.id);
    await expect(manager.getSnapshot(created.id)).rejects.toThrow();
  });

  it('deletes the sandbox', async () => {
    await sandbox.kill();
    await expect.poll(async () => (await sandbox.getInfo()).status.state, settled).toBe('Terminated');
  });

  it('reads the fake error shape as the SDK expects it', async () => {
    const manager = SandboxManager.create({ connectionConfig });
    const error = await manager.getSandboxInfo('no-such-sandbox').catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 404, error: { code: 'DOCKER::SANDBOX_NOT_FOUND' } });
    expect((error as { requestId?: string }).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  // Runs last: every answer the client flows above received, held to OpenSandbox's published API.
  const documents = [
    {
      name: 'the contract written from the published documents',
      lifecycle: () => new OpenApiValidator(openSandboxLifecycleContract),
      execd: () => new OpenApiValidator(openSandboxExecdContract),
      skip: false,
    },
    {
      name: 'the published OpenAPI documents themselves',
      lifecycle: () => new OpenApiValidator(join(specs ?? '', 'sandbox-lifecycle.yml')),
      execd: () => new OpenApiValidator(join(specs ?? '', 'execd-api.yaml')),
      // They are the provider's files, not this repository's: checked where they are present.
      skip: specs === undefined,
    },
  ];
  for (const document of documents)
    it.skipIf(document.skip)(`answered only what ${document.name} declare`, () => {
      const lifecycle = document.lifecycle();
      const execd = document.execd();
      const problems = fake.exchanges.flatMap((exchange) => {
        // The client's usage telemetry is newer than the published documents: the fake answers it 404, as
        // a server of that version does, and the client ignores the answer.
        if (/^(\/v1)?\/metrics\/events/.test(exchange.path)) return [];
        const inExecd = /^\/execd\/[^/]+(\/.*)$/.exec(exchange.path);
        // While the sandbox starts, its execd is not reachable and the ingress in front of it answers 502,
        // which the client's readiness poll retries: an answer of the gateway, not of execd's API.
        if (inExecd !== null && exchange.status === 502) return [];
        return inExecd?.[1] === undefined
          ? lifecycle.problemsOf(exchange)
          : execd.problemsOf({ ...exchange, path: inExecd[1] });
      });
      expect(fake.exchanges.length).toBeGreaterThan(20);
      expect(problems).toEqual([]);
    });
});
