import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DifferentlyClient, type ExecStreamLine } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

const serve = new URL('../../adapters/protocol/serve.ts', import.meta.url).pathname;

/** Starts the plugin server (`npm run adapter:serve`) in a child process; resolves with its URL. */
function startPlugin(token: string): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [serve, '--kind', 'fake', '--port', '0'], {
      env: { ...process.env, DIFFERENTLY_ADAPTER_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /at (http:\/\/127\.0\.0\.1:\d+)\/adapter\/v1/.exec(out);
      if (match?.[1] !== undefined) resolve({ child, url: match[1] });
    });
    child.on('exit', (code) => reject(new Error(`the plugin server exited with ${code}: ${out}`)));
  });
}

describe('a remote pool on the local runtime, with the plugin server in a child process', () => {
  let e: E2e;
  let plugin: { child: ChildProcess; url: string };
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;

  beforeAll(async () => {
    process.env.POOL_CREDENTIAL_LAB = 'lab-token-0123456789abcdef';
    plugin = await startPlugin(process.env.POOL_CREDENTIAL_LAB);
    e = await startE2e();
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
  });

  afterAll(async () => {
    plugin?.child.kill('SIGTERM');
    await e?.stop();
    delete process.env.POOL_CREDENTIAL_LAB;
  });

  it('registers the pool and shows what the plugin declares, with the operator trust', async () => {
    const pool = await admin.admin.createPool({
      name: 'lab',
      adapter: 'remote',
      region: 'lab-1',
      maxConcurrency: 20,
      config: { endpoint: plugin.url },
      credentials: { env: 'POOL_CREDENTIAL_LAB' },
    });
    expect(pool).toMatchObject({
      name: 'lab',
      adapter: 'remote',
      trust: 'private',
      health: { healthy: true },
    });
    expect(pool.features).toEqual(expect.arrayContaining(['exec', 'exec.stream', 'files', 'snapshots.disk']));
    const trust = await tenant.trust();
    expect(trust.pools.find((p) => p.name === 'lab')).toMatchObject({ adapter: 'remote', trust: 'private' });
  });

  it('creates, execs (sync and streamed), moves files, snapshots and deletes through the plugin', async () => {
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['lab'] } })).id,
      { intervalMs: 20 },
    );
    expect(sandbox.pool).toBe('lab');
    expect((await tenant.exec(sandbox.id, { command: 'echo hi' })).stdout).toBe('echo hi\n');
    const events: ExecStreamLine[] = [];
    for await (const event of tenant.execStream(sandbox.id, { command: 'streamed' })) events.push(event);
    expect(events).toEqual([{ stream: 'stdout', data: 'streamed\n' }, { exitCode: 0 }]);
    await tenant.writeFile(sandbox.id, '/work/a.txt', 'remote bytes');
    expect(new TextDecoder().decode(await tenant.readFile(sandbox.id, '/work/a.txt'))).toBe('remote bytes');
    expect((await tenant.listFiles(sandbox.id, '/work')).items.map((f) => f.name)).toEqual(['a.txt']);
    const snapshot = await tenant.createSnapshot(sandbox.id);
    const restored = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ fromSnapshot: snapshot.id })).id,
      {
        intervalMs: 20,
      },
    );
    expect(new TextDecoder().decode(await tenant.readFile(restored.id, '/work/a.txt'))).toBe('remote bytes');
    for (const id of [sandbox.id, restored.id]) {
      await tenant.deleteSandbox(id);
      await e.until(id, 'terminated');
    }
    await tenant.deleteSnapshot(snapshot.id);
    const report = await admin.admin.reconcile();
    expect(report.pools.find((p) => p.pool === 'lab')).toMatchObject({ orphansDeleted: 0, failed: 0 });
  });

  it('refuses a remote pool whose endpoint is not a URL', async () => {
    await expect(
      admin.admin.createPool({ name: 'broken', adapter: 'remote', config: { endpoint: 'not a url' } }),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
  });
});
