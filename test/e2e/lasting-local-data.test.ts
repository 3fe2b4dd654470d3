import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { client, waitFor } from '../helpers/http-client.ts';

const root = new URL('../../', import.meta.url).pathname;

/** `npm start -- ...` as a user runs it: the banner read back for the URL and the admin key. */
async function start(args: string[]): Promise<{ child: ChildProcess; url: string; adminKey: string }> {
  const child = spawn(process.execPath, ['infra/local/main.ts', '--port', '0', ...args], {
    cwd: root,
    env: { ...process.env, DIFFERENTLY_ADMIN_KEY: '', AWS_ENDPOINT_URL_DYNAMODB: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let banner = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    banner += chunk.toString();
  });
  await waitFor(
    async () => banner,
    (text) => text.includes('Press Ctrl-C') || child.exitCode !== null,
    'the start banner',
    90_000,
  );
  const url = /running at (http:\/\/\S+)/.exec(banner)?.[1];
  const adminKey = /admin key: (\S+)/.exec(banner)?.[1];
  if (url === undefined || adminKey === undefined) throw new Error(`no banner: ${banner}`);
  return { child, url, adminKey };
}

/** The DynamoDB Local processes working on `dataDir`. */
function javaOn(dataDir: string): string[] {
  const found = spawnSync('pgrep', ['-f', `dynamodb-local-loopback.java -dbPath ${dataDir}`], {
    encoding: 'utf8',
  });
  return found.stdout.split('\n').filter((line) => line.trim() !== '');
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started) child.kill('SIGKILL');
  started.length = 0;
});

describe('npm start -- --store dynamodb keeps its data', () => {
  it('keeps orgs, keys, sandboxes and the admin key across a kill -9 and a restart, and its Java ends with it', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'lasting-')), 'dynamodb');
    const first = await start(['--store', 'dynamodb', '--data-dir', dataDir]);
    started.push(first.child);
    const api = client(first.url);
    const org = (await api.post('/v1/admin/orgs', first.adminKey, { name: 'lasting' })).body as {
      id: string;
    };
    const key = (await api.post(`/v1/admin/orgs/${org.id}/keys`, first.adminKey, { name: 'k' })).body as {
      key: string;
    };
    const created = await api.post('/v1/sandboxes', key.key, { placement: { allowedPools: ['fake'] } });
    const sandbox = created.body as { id: string };
    await waitFor(
      async () => ((await api.get(`/v1/sandboxes/${sandbox.id}`, key.key)).body as { status: string }).status,
      (status) => status === 'running',
      'the sandbox running',
      60_000,
    );
    expect(javaOn(dataDir).length).toBeGreaterThan(0);

    // A crash: no clean stop, nothing flushed by the runtime.
    first.child.kill('SIGKILL');
    await waitFor(
      async () => javaOn(dataDir).length,
      (n) => n === 0,
      'Java gone after kill -9',
      30_000,
    );

    const second = await start(['--store', 'dynamodb', '--data-dir', dataDir]);
    started.push(second.child);
    expect(second.adminKey).toBe(first.adminKey);
    const again = client(second.url);
    expect((await again.get(`/v1/admin/orgs/${org.id}`, second.adminKey)).body).toMatchObject({
      name: 'lasting',
    });
    expect((await again.get(`/v1/sandboxes/${sandbox.id}`, key.key)).body).toMatchObject({
      id: sandbox.id,
      status: 'running',
    });
    second.child.kill('SIGTERM');
    await waitFor(
      async () => javaOn(dataDir).length,
      (n) => n === 0,
      'Java gone after a stop',
      30_000,
    );
  }, 240_000);
});
