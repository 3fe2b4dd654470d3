import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DifferentlyClient, type ExecStreamLine } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { type PythonPlugin, startPythonPlugin } from '../helpers/python-plugin.ts';

/** A plugin written from the specification alone, in another language, runs sandboxes end to end. */
describe('the Python reference plugin as a remote pool on the local runtime', () => {
  const token = 'python-e2e-token-0123456789abcdef';
  let e: E2e;
  let plugin: PythonPlugin;
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;

  beforeAll(async () => {
    process.env.POOL_CREDENTIAL_PY = token;
    plugin = await startPythonPlugin(token);
    e = await startE2e();
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
  });

  afterAll(async () => {
    await e?.stop();
    await plugin?.stop();
    delete process.env.POOL_CREDENTIAL_PY;
  });

  it('registers, runs create, exec, streamed exec and files, deletes, and reconciles with nothing orphaned', async () => {
    const pool = await admin.admin.createPool({
      name: 'py',
      adapter: 'remote',
      maxConcurrency: 5,
      config: { endpoint: plugin.url },
      credentials: { env: 'POOL_CREDENTIAL_PY' },
    });
    expect(pool).toMatchObject({ adapter: 'remote', health: { healthy: true } });
    expect(pool.features).toEqual(['exec', 'exec.stream', 'files', 'exec.stdin', 'exec.pty']);
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['py'] }, env: { WHO: 'python' } })).id,
      { intervalMs: 20 },
    );
    expect(sandbox.pool).toBe('py');
    const result = await tenant.exec(sandbox.id, { command: 'echo "hello $WHO"; exit 7' });
    expect(result).toMatchObject({
      exitCode: 7,
      stdout: 'hello python\n',
      truncated: false,
      timedOut: false,
    });
    const events: ExecStreamLine[] = [];
    for await (const event of tenant.execStream(sandbox.id, { command: 'echo one; echo two >&2' }))
      events.push(event);
    expect(events.at(-1)).toEqual({ exitCode: 0 });
    expect(events.filter((event) => 'data' in event)).toEqual(
      expect.arrayContaining([
        { stream: 'stdout', data: 'one\n' },
        { stream: 'stderr', data: 'two\n' },
      ]),
    );
    await tenant.writeFile(sandbox.id, '/work/notes.txt', 'from the files API');
    // A command's default directory is the instance's /work: it sees the file the files API wrote there.
    expect((await tenant.exec(sandbox.id, { command: 'cat notes.txt' })).stdout).toBe('from the files API');
    expect((await tenant.listFiles(sandbox.id, '/work')).items.map((f) => f.name)).toEqual(['notes.txt']);
    expect(new TextDecoder().decode(await tenant.readFile(sandbox.id, '/work/notes.txt'))).toBe(
      'from the files API',
    );
    // What the plugin does not declare is refused by the control plane, naming the operation.
    const stop = await e.api.post(`/v1/sandboxes/${sandbox.id}/stop`, e.key);
    expect(stop.status).toBe(501);
    await tenant.deleteSandbox(sandbox.id);
    await e.until(sandbox.id, 'terminated');
    expect((await admin.admin.reconcile()).pools.find((p) => p.pool === 'py')).toMatchObject({
      orphansDeleted: 0,
      duplicatesDeleted: 0,
      failed: 0,
    });
  });
});
