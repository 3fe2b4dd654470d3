import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../adapters/registry.ts';
import type { ExecutionAdapter } from '../../lib/adapter/port.ts';
import { parseConfig } from '../../lib/config.ts';
import { type ControlPlane, createControlPlane } from '../../lib/control-plane.ts';
import { silentLog } from '../../lib/log.ts';
import type { QueueName, SendOptions, WorkMessage, WorkQueue } from '../../lib/queue/port.ts';
import { runOperation } from '../../lib/scheduler/operations-worker.ts';
import { memoryStore } from '../../lib/store/memory.ts';
import type { Principal } from '../../lib/tenancy/auth.ts';

/** A queue that records what was sent, for tests of lib logic that do not need SQS itself. */
export class RecordingQueue implements WorkQueue {
  readonly sent: { queue: QueueName; message: WorkMessage; options?: SendOptions }[] = [];
  failSends = false;
  /** Called after each send: a test plane runs the operations worker here, as SQS would invoke it. */
  onSend: ((queue: QueueName, message: WorkMessage) => void) | undefined;

  async send(queue: QueueName, message: WorkMessage, options?: SendOptions): Promise<void> {
    if (this.failSends) throw new Error('SQS is unreachable');
    this.sent.push({ queue, message, ...(options && { options }) });
    this.onSend?.(queue, message);
  }

  async changeVisibility(): Promise<void> {}
}

/** A control plane on the memory store with two fake pools, `first` and `second`, in that order. */
export async function testPlane(
  overrides: {
    maxAttempts?: number;
    operationWaitSeconds?: number;
    now?: () => Date;
    /** Prices of the `first` pool (lib/budgets/prices.ts). */
    prices?: Record<string, unknown>;
    /** More pools after the two fakes: each pool's config entry and the adapter it runs on. */
    pools?: { spec: { name: string } & Record<string, unknown>; adapter: ExecutionAdapter }[];
  } = {},
) {
  const adapters: Record<string, ExecutionAdapter> & { first: FakeAdapter; second: FakeAdapter } = {
    first: new FakeAdapter(),
    second: new FakeAdapter(),
  };
  for (const extra of overrides.pools ?? []) adapters[extra.spec.name] = extra.adapter;
  const config = parseConfig({
    devMode: true,
    pools: [
      { name: 'first', adapter: 'fake', ...(overrides.prices !== undefined && { prices: overrides.prices }) },
      { name: 'second', adapter: 'fake' },
      ...(overrides.pools ?? []).map((extra) => extra.spec),
    ],
    scheduler: { maxAttempts: overrides.maxAttempts ?? 3 },
    // External pools among the extra ones may receive work (the placement policy is not under test).
    ...(overrides.pools !== undefined && {
      policy: { allowExternal: true, externalPools: overrides.pools.map((extra) => extra.spec.name) },
    }),
    ...(overrides.operationWaitSeconds !== undefined && {
      api: { operationWaitSeconds: overrides.operationWaitSeconds },
    }),
  });
  const queue = new RecordingQueue();
  // The store keeps the plane's clock: idempotency windows and audit times are read against it.
  const store = memoryStore(overrides.now !== undefined ? { now: overrides.now } : {});
  const plane: ControlPlane = createControlPlane({
    config,
    store,
    queue,
    pools: await buildPools(config, { log: silentLog, adapters, store }),
    log: silentLog,
    adminKey: 'test-admin-key',
    validateResponses: true,
    ...(overrides.now !== undefined && { now: overrides.now }),
  });
  // The operations worker, as SQS would invoke it: lifecycle calls and snapshots settle shortly after.
  queue.onSend = (name, message) => {
    if (name === 'operations') void runOperation(plane, message).catch(() => undefined);
  };
  const org = await plane.tenancy.createOrg({ name: 'test' });
  const principal: Extract<Principal, { kind: 'org' }> = {
    kind: 'org',
    orgId: org.id,
    keyId: 'key_test',
    role: 'member',
    projectId: null,
  };
  return { plane, adapters, queue, principal };
}
