import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { client, waitFor } from '../helpers/http-client.ts';

/** A run whose store keeps nothing leaves no devhost folders behind that no record names any more. */
describe('a local run in memory', () => {
  it('removes the devhost sandbox and snapshot folders it made when it stops, and no others', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memory-run-'));
    try {
      // A folder that was there before (another run's): left alone.
      await mkdir(join(root, 'sbx_01J00000000000000000000000'));
      const runtime = await startLocalRuntime({
        config: parseConfig({
          devMode: true,
          pools: [{ name: 'local', adapter: 'devhost', config: { root } }],
        }),
        sweepIntervalSeconds: 0,
        reconcileIntervalSeconds: 0,
        poolRefreshIntervalSeconds: 0,
      });
      const api = client(runtime.url);
      const org = (await api.post('/v1/admin/orgs', runtime.adminKey, { name: 'mem' })).body as {
        id: string;
      };
      const key = (
        (await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 'k' })).body as {
          key: string;
        }
      ).key;
      const created = (await api.post('/v1/sandboxes', key, { placement: { allowedPools: ['local'] } }))
        .body as { id: string };
      await waitFor(
        () => api.get(`/v1/sandboxes/${created.id}`, key),
        (r) => (r.body as { status: string }).status === 'running',
        'running',
      );
      const snapshot = await api.post(`/v1/sandboxes/${created.id}/snapshots`, key, { kind: 'disk' });
      expect([201, 202]).toContain(snapshot.status);
      await waitFor(
        () => api.get(`/v1/snapshots/${(snapshot.body as { id: string }).id}`, key),
        (r) => (r.body as { status: string }).status === 'ready',
        'snapshot ready',
      );
      expect((await readdir(root)).filter((name) => name.startsWith('sbx_'))).toHaveLength(2);
      expect(await readdir(join(root, '.snapshots'))).toHaveLength(1);
      await runtime.stop();
      expect((await readdir(root)).filter((name) => name.startsWith('sbx_'))).toEqual([
        'sbx_01J00000000000000000000000',
      ]);
      expect(await readdir(join(root, '.snapshots'))).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
