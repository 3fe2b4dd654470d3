import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { runCli } from '../helpers/cli.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

const cli = runCli;

describe('the differently CLI', () => {
  let e: E2e;
  let dir: string;
  let asTenant: Record<string, string>;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    dir = await mkdtemp(join(tmpdir(), 'cli-test-'));
    const asAdmin = ['--endpoint', e.runtime.url, '--key', e.runtime.adminKey, '--json'];
    const org = z
      .object({ id: z.string() })
      .parse(JSON.parse((await cli(['admin', 'orgs', 'create', 'cli', ...asAdmin])).stdout));
    const key = z
      .object({ key: z.string() })
      .parse(JSON.parse((await cli(['admin', 'keys', 'create', org.id, 'k', ...asAdmin])).stdout));
    asTenant = { DIFFERENTLY_ENDPOINT: e.runtime.url, DIFFERENTLY_API_KEY: key.key };
  });

  afterAll(async () => {
    await e?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('says what is missing when the endpoint or key is empty or not a URL (exit 2)', async () => {
    const empty = await cli(['usage'], { DIFFERENTLY_ENDPOINT: '', DIFFERENTLY_API_KEY: '' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('set --endpoint and --key');
    const notUrl = await cli(['usage'], { DIFFERENTLY_ENDPOINT: 'nope', DIFFERENTLY_API_KEY: 'k' });
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toContain('the endpoint is not a URL: nope');
  });

  it('creates and waits, printing the running record as JSON', async () => {
    const run = await cli(['sandboxes', 'create', '--pool', 'fake', '--wait', '--json'], asTenant);
    expect(run.code).toBe(0);
    expect(sandboxSchema.parse(JSON.parse(run.stdout)).status).toBe('running');
    const list = await cli(['sandboxes', 'list', '--json'], asTenant);
    expect(
      z.object({ items: z.array(sandboxSchema) }).parse(JSON.parse(list.stdout)).items.length,
    ).toBeGreaterThan(0);
    const human = await cli(['sandboxes', 'list'], asTenant);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+POOL/);
  });

  it('streams exec output and exits with the command’s exit code', async () => {
    const created = sandboxSchema.parse(
      JSON.parse(
        (await cli(['sandboxes', 'create', '--pool', 'local', '--wait', '--json'], asTenant)).stdout,
      ),
    );
    const run = await cli(['exec', created.id, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], asTenant);
    expect(run).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('moves a sandbox through its lifecycle, updates it, and lists the audit events', async () => {
    const created = sandboxSchema.parse(
      JSON.parse((await cli(['sandboxes', 'create', '--pool', 'fake', '--wait', '--json'], asTenant)).stdout),
    );
    for (const [action, status] of [
      ['pause', 'paused'],
      ['resume', 'running'],
      ['stop', 'stopped'],
      ['start', 'running'],
    ]) {
      const run = await cli(['sandboxes', action ?? '', created.id], asTenant);
      expect(run.stdout).toBe(`${created.id} ${status}\n`);
    }
    const updated = await cli(
      ['sandboxes', 'update', created.id, '--ttl', '600', '--label', 'team=cli', '--json'],
      asTenant,
    );
    expect(JSON.parse(updated.stdout)).toMatchObject({ ttlSeconds: 600, labels: { team: 'cli' } });
    const snapshot = z
      .object({ id: z.string() })
      .parse(JSON.parse((await cli(['snapshots', 'create', created.id, '--json'], asTenant)).stdout));
    expect((await cli(['snapshots', 'get', snapshot.id], asTenant)).stdout).toContain(snapshot.id);
    const audit = await cli(['audit', 'list'], asTenant);
    expect(audit.stdout).toContain('sandbox.paused');
  });

  it('round-trips a file', async () => {
    const created = sandboxSchema.parse(
      JSON.parse(
        (await cli(['sandboxes', 'create', '--pool', 'local', '--wait', '--json'], asTenant)).stdout,
      ),
    );
    const source = join(dir, 'in.bin');
    const target = join(dir, 'out.bin');
    await writeFile(source, Buffer.from([1, 2, 3, 250]));
    expect((await cli(['files', 'put', created.id, '/data/in.bin', source], asTenant)).code).toBe(0);
    expect((await cli(['files', 'get', created.id, '/data/in.bin', '--out', target], asTenant)).code).toBe(0);
    expect((await readFile(target)).equals(Buffer.from([1, 2, 3, 250]))).toBe(true);
    expect((await cli(['files', 'ls', created.id, '/data'], asTenant)).stdout).toContain('in.bin');
  });

  it('prints the server’s code and message on errors, and which endpoint it could not reach', async () => {
    const missing = await cli(['sandboxes', 'get', 'sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV'], asTenant);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: not_found: sandbox sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV not found\n');
    const offline = await cli(['sandboxes', 'list'], {
      ...asTenant,
      DIFFERENTLY_ENDPOINT: 'http://127.0.0.1:9',
    });
    expect(offline.code).toBe(1);
    expect(offline.stderr).toBe('error: could not reach http://127.0.0.1:9\n');
    expect(offline.stderr).not.toContain(asTenant.DIFFERENTLY_API_KEY ?? 'unset');
  });

  it('preflight names a bad field, names an unresolvable credential reference, and passes a good config', async () => {
    const write = async (name: string, config: unknown) => {
      const path = join(dir, name);
      await writeFile(path, JSON.stringify(config));
      return path;
    };
    const bad = await cli([
      'preflight',
      '--config',
      await write('bad.json', { pools: [{ name: 'x', adapter: 'nope' }] }),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('pools[0].adapter');
    const badSettings = await cli([
      'preflight',
      '--config',
      await write('bad-settings.json', {
        pools: [{ name: 'os', adapter: 'opensandbox', trust: 'private', config: { image: 'x' } }],
      }),
    ]);
    expect(badSettings.code).toBe(1);
    expect(badSettings.stderr).toContain('pool os: config is not valid: apiURL');
    const unresolved = await cli([
      'preflight',
      '--config',
      await write('cred.json', {
        devMode: true,
        pools: [{ name: 'p', adapter: 'fake', credentials: { env: 'NOT_SET_ANYWHERE' } }],
      }),
    ]);
    expect(unresolved.code).toBe(1);
    expect(unresolved.stderr).toContain('pool p: credentials.env NOT_SET_ANYWHERE is not set');
    const good = await cli(
      [
        'preflight',
        '--config',
        await write('good.json', {
          devMode: true,
          pools: [{ name: 'p', adapter: 'fake', credentials: { env: 'PRESENT_TOKEN' } }],
        }),
      ],
      { PRESENT_TOKEN: 'x' },
    );
    expect(good.code).toBe(0);
    expect(good.stdout).toContain('ok (1 pools)');
  });

  it('administers projects, quotas, key rotation, pools and the policy; tenants read usage and trust', async () => {
    const asAdmin = ['--endpoint', e.runtime.url, '--key', e.runtime.adminKey, '--json'];
    const json = async (args: string[], env: Record<string, string> = {}) => {
      const run = await cli(args, env);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      const parsed: unknown = JSON.parse(run.stdout);
      return z.record(z.string(), z.unknown()).parse(parsed);
    };
    const org = await json(['admin', 'orgs', 'create', 'ops', ...asAdmin]);
    const orgId = String(org.id);
    const project = await json(['admin', 'projects', 'create', orgId, 'web', ...asAdmin]);
    expect(project).toMatchObject({ orgId, name: 'web' });
    const listed = await json(['admin', 'projects', 'list', orgId, ...asAdmin]);
    expect(listed.items).toEqual([project]);
    const quota = await json(['admin', 'orgs', 'quota', orgId, 'maxCPU=6', 'maxSandboxes=4', ...asAdmin]);
    expect(quota.quota).toMatchObject({ maxCPU: 6, maxSandboxes: 4 });
    const key = await json([
      'admin',
      'keys',
      'create',
      orgId,
      'ci',
      '--project',
      String(project.id),
      ...asAdmin,
    ]);
    const rotated = await json(['admin', 'keys', 'rotate', String(key.id), ...asAdmin]);
    expect(rotated.projectId).toBe(project.id);
    const tenantEnv = { DIFFERENTLY_ENDPOINT: e.runtime.url, DIFFERENTLY_API_KEY: String(rotated.key) };
    expect(await json(['admin', 'orgs', 'budget', orgId, '250', ...asAdmin])).toMatchObject({
      monthly: 250,
      left: 250,
    });
    expect(
      await json(['admin', 'projects', 'budget', orgId, String(project.id), '40.5', ...asAdmin]),
    ).toMatchObject({ monthly: 40.5 });
    expect(await json(['admin', 'orgs', 'budget', orgId, ...asAdmin])).toMatchObject({ monthly: 250 });
    const badAmount = await cli(['admin', 'orgs', 'budget', orgId, 'lots', ...asAdmin]);
    expect(badAmount.code).toBe(2);
    expect(badAmount.stderr).toContain('lots is not an amount');
    const usage = await json(['usage', '--json'], tenantEnv);
    expect(usage.quota).toMatchObject({ maxCPU: 6 });
    expect(usage.budget).toMatchObject({ monthly: 250 });
    expect(usage.projectBudget).toMatchObject({ monthly: 40.5 });
    const hook = await json([
      'admin',
      'webhooks',
      'create',
      orgId,
      'http://127.0.0.1:9/hook',
      '--event',
      'sandbox.running',
      ...asAdmin,
    ]);
    expect(String(hook.secret)).toMatch(/^whsec_/);
    expect(await json(['admin', 'webhooks', 'deliveries', orgId, String(hook.id), ...asAdmin])).toMatchObject(
      { items: [] },
    );
    const network = ['admin', 'orgs', 'network', orgId];
    expect(
      await json([...network, '--egress', 'allowlist', '--allow', 'pypi.org:443', ...asAdmin]),
    ).toMatchObject({ networkPolicy: { egress: 'allowlist', allow: ['pypi.org:443'] } });
    expect(await json([...network, 'none', ...asAdmin])).toMatchObject({ networkPolicy: null });
    const noMode = await cli([...network, ...asAdmin]);
    expect(noMode.code).toBe(2);
    expect(noMode.stderr).toContain('orgs network needs --egress, or none');
    const hooks = await json(['admin', 'webhooks', 'list', orgId, ...asAdmin]);
    expect(hooks.items).toEqual([expect.objectContaining({ id: hook.id, events: ['sandbox.running'] })]);
    expect(await json(['admin', 'webhooks', 'delete', orgId, String(hook.id), ...asAdmin])).toMatchObject({
      deleted: true,
    });
    expect(await json(['admin', 'orgs', 'budget', orgId, 'none', ...asAdmin])).toMatchObject({
      monthly: null,
      left: null,
    });
    const old = await cli(['usage'], { ...tenantEnv, DIFFERENTLY_API_KEY: String(key.key) });
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('unauthenticated');

    const poolFile = join(dir, 'pool.json');
    await writeFile(
      poolFile,
      JSON.stringify({ name: 'partner', adapter: 'fake', trust: 'external', region: 'x-1' }),
    );
    const pool = await json(['admin', 'pools', 'create', '--file', poolFile, ...asAdmin]);
    expect(pool).toMatchObject({ name: 'partner', trust: 'external', source: 'api' });
    await writeFile(poolFile, JSON.stringify({ maxConcurrency: 3 }));
    expect(await json(['admin', 'pools', 'update', 'partner', '--file', poolFile, ...asAdmin])).toMatchObject(
      {
        maxConcurrency: 3,
      },
    );
    const table = await cli([
      'admin',
      'pools',
      'list',
      '--endpoint',
      e.runtime.url,
      '--key',
      e.runtime.adminKey,
    ]);
    expect(table.stdout).toMatch(/^NAME\s+ADAPTER\s+TRUST/);
    expect(table.stdout).toMatch(/partner\s+fake\s+external/);
    await writeFile(poolFile, JSON.stringify({ name: 'typo', adapter: 'fake', maxConcurency: 1 }));
    const bad = await cli(['admin', 'pools', 'create', '--file', poolFile, ...asAdmin]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('maxConcurency: unknown field');
    const policy = await json([
      'admin',
      'policy',
      'set',
      '--allow-external',
      '--external-pool',
      'partner',
      ...asAdmin,
    ]);
    expect(policy).toEqual({ allowExternal: true, externalPools: ['partner'], source: 'api' });
    const trust = await cli(['trust'], tenantEnv);
    expect(trust.stdout).toMatch(/partner\s+fake\s+external/);
    expect(trust.stdout).toContain('external placement allowed (partner)');
    await json(['admin', 'policy', 'set', ...asAdmin]);
    expect((await json(['admin', 'pools', 'delete', 'partner', ...asAdmin])).deleted).toBe(true);
  });

  it('answers --help on every command', async () => {
    for (const command of [
      [],
      ['sandboxes'],
      ['exec'],
      ['files'],
      ['snapshots'],
      ['admin'],
      ['preflight'],
      ['usage'],
      ['trust'],
    ]) {
      const run = await cli([...command, '--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^(Usage|differently)/);
    }
  });
});
