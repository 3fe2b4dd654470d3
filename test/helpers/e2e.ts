import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import type { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { type SandboxView, sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { client, waitFor } from './http-client.ts';

export interface E2e {
  runtime: LocalRuntime;
  api: ReturnType<typeof client>;
  /** An org key of the suite's org. */
  key: string;
  get(id: string, as?: string): Promise<SandboxView>;
  until(id: string, status: string, as?: string): Promise<SandboxView>;
  /** Creates a sandbox on `pool` and waits until it runs. */
  running(pool: string, extra?: Record<string, unknown>, as?: string): Promise<SandboxView>;
  destroy(id: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The local runtime with a devhost pool `local`, a fake pool `fake` and any extra fake pools, no timers,
 * an org (with `quota`) and a key for it: the setup every e2e suite shares.
 */
export async function startE2e(
  options: {
    /** Extra fake pools; `pool` adds pool settings (trust, region, maxConcurrency, costModel). */
    fakes?: Record<string, { adapter: FakeAdapter; features?: string[]; pool?: Record<string, unknown> }>;
    quota?: Record<string, number>;
    /** Extra top-level config (profiles, classifications, policy, templates). */
    config?: Record<string, unknown>;
    /** Queue settings over the defaults (a webhooks queue that dead-letters sooner, say). */
    queues?: LocalRuntimeOptions['queues'];
    /** DynamoDB Local at this endpoint instead of the memory store (a fresh table per runtime is not needed: ids are unique). */
    dynamodbEndpoint?: string;
    /** Where the runtime logs (a test that searches its log lines). */
    log?: LocalRuntimeOptions['log'];
  } = {},
): Promise<E2e> {
  const root = await mkdtemp(join(tmpdir(), 'e2e-devhost-'));
  const fakes = options.fakes ?? {};
  const runtime = await startLocalRuntime({
    config: parseConfig({
      devMode: true,
      pools: [
        { name: 'local', adapter: 'devhost', config: { root } },
        ...Object.entries(fakes).map(([name, fake]) => ({
          name,
          adapter: 'fake',
          ...(fake.features !== undefined && { features: fake.features }),
          ...fake.pool,
        })),
      ],
      ...options.config,
    }),
    adapters: Object.fromEntries(Object.entries(fakes).map(([name, fake]) => [name, fake.adapter])),
    sweepIntervalSeconds: 0,
    reconcileIntervalSeconds: 0,
    poolRefreshIntervalSeconds: 0,
    ...(options.queues !== undefined && { queues: options.queues }),
    ...(options.log !== undefined && { log: options.log }),
    ...(options.dynamodbEndpoint !== undefined && {
      storeKind: 'dynamodb' as const,
      dynamodbEndpoint: options.dynamodbEndpoint,
    }),
  });
  const api = client(runtime.url);
  const org = z.object({ id: z.string() }).parse(
    (
      await api.post('/v1/admin/orgs', runtime.adminKey, {
        name: 'e2e',
        ...(options.quota && { quota: options.quota }),
      })
    ).body,
  );
  const key = z
    .object({ key: z.string() })
    .parse((await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 'e2e' })).body).key;
  const get = async (id: string, as = key) =>
    sandboxSchema.parse((await api.get(`/v1/sandboxes/${id}`, as)).body);
  const until = (id: string, status: string, as = key) =>
    waitFor(
      () => get(id, as),
      (s) => s.status === status || s.status === 'failed',
      status,
    );
  return {
    runtime,
    api,
    key,
    get,
    until,
    async running(pool, extra = {}, as = key) {
      const created = sandboxSchema.parse(
        (await api.post('/v1/sandboxes', as, { placement: { allowedPools: [pool] }, ...extra })).body,
      );
      return until(created.id, 'running', as);
    },
    async destroy(id) {
      await api.delete(`/v1/sandboxes/${id}`, key);
      await until(id, 'terminated');
    },
    async stop() {
      await runtime.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
