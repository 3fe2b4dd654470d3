import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { effectiveFeatures } from '../../../lib/adapter/features.ts';
import {
  estimatedHourlyCost,
  type PlacementContext,
  type PlacementRequest,
  type PoolState,
  place,
} from '../../../lib/placement/policy.ts';

type PoolOverrides = Omit<Partial<PoolState>, 'config'> & { config?: Partial<PoolState['config']> };

function pool(name: string, overrides: PoolOverrides = {}): PoolState {
  const { config, ...rest } = overrides;
  return {
    config: { name, trust: 'private', maxConcurrency: 0, ...config },
    features: ['exec', 'files'],
    capabilities: { maxCPU: 0, maxMemoryMiB: 0, maxDiskGiB: 0, templates: [] },
    healthy: true,
    unhealthyReason: null,
    capacity: null,
    active: null,
    ...rest,
  };
}

const request = (overrides: Partial<PlacementRequest> = {}): PlacementRequest => ({
  capabilities: [],
  template: null,
  resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
  allowedPools: null,
  regions: null,
  classification: null,
  ...overrides,
});

const closed: PlacementContext = {
  policy: { allowExternal: false, externalPools: [] },
  classifications: { public: { allowExternal: true }, confidential: { allowExternal: false } },
};
const open: PlacementContext = { ...closed, policy: { allowExternal: true, externalPools: ['ext'] } };
const ext = (overrides: PoolOverrides = {}) => pool('ext', { config: { trust: 'external' }, ...overrides });

const names = (pools: PoolState[]) => pools.map((p) => p.config.name);

describe('placement: rejection reasons', () => {
  it.each([
    {
      rule: 'not in allowedPools',
      pools: [pool('a'), pool('b')],
      req: request({ allowedPools: ['b'] }),
      ctx: closed,
      rejected: { pool: 'a', kind: 'not-permitted', reason: /allowedPools/ },
    },
    {
      rule: 'external pool while the policy forbids external placement',
      pools: [ext()],
      req: request(),
      ctx: closed,
      rejected: { pool: 'ext', kind: 'not-permitted', reason: /does not allow external placement/ },
    },
    {
      rule: 'external pool allowed but not named in externalPools',
      pools: [pool('other', { config: { trust: 'external' } })],
      req: request(),
      ctx: open,
      rejected: { pool: 'other', kind: 'not-permitted', reason: /externalPools/ },
    },
    {
      rule: 'external pool refused by the classification',
      pools: [ext()],
      req: request({ classification: 'confidential' }),
      ctx: open,
      rejected: { pool: 'ext', kind: 'not-permitted', reason: /classification confidential/ },
    },
    {
      rule: 'a missing capability',
      pools: [pool('a')],
      req: request({ capabilities: ['exec', 'gpu'] }),
      ctx: closed,
      rejected: { pool: 'a', kind: 'missing-capabilities', reason: /missing capabilities: gpu/ },
    },
    {
      rule: 'a template the pool does not offer',
      pools: [pool('a', { capabilities: { maxCPU: 0, maxMemoryMiB: 0, maxDiskGiB: 0, templates: ['py'] } })],
      req: request({ template: 'node' }),
      ctx: closed,
      rejected: { pool: 'a', kind: 'template', reason: /does not offer template node/ },
    },
    {
      rule: "resources over the pool's limits",
      pools: [pool('a', { capabilities: { maxCPU: 4, maxMemoryMiB: 8192, maxDiskGiB: 10, templates: [] } })],
      req: request({ resources: { cpu: 8, memoryMiB: 1024, diskGiB: 20 } }),
      ctx: closed,
      rejected: { pool: 'a', kind: 'limits', reason: /cpu 8 > 4, diskGiB 20 > 10/ },
    },
    {
      rule: 'unhealthy',
      pools: [pool('a', { healthy: false, unhealthyReason: 'no adapter for kind firecracker' })],
      req: request(),
      ctx: closed,
      rejected: { pool: 'a', kind: 'unhealthy', reason: /firecracker/ },
    },
    {
      rule: 'bounded capacity: no node has room (largest free, not total free)',
      pools: [
        pool('a', {
          capacity: {
            bounded: true,
            freeCPU: 8,
            freeMemoryMiB: 8192,
            largestFreeCPU: 0.5,
            largestFreeMemoryMiB: 8192,
          },
        }),
      ],
      req: request(),
      ctx: closed,
      rejected: { pool: 'a', kind: 'no-room', reason: /no node has room/ },
    },
    {
      rule: 'unbounded capacity: at maxConcurrency',
      pools: [pool('a', { config: { maxConcurrency: 2 }, active: 2 })],
      req: request(),
      ctx: closed,
      rejected: { pool: 'a', kind: 'no-room', reason: /maxConcurrency \(2 of 2/ },
    },
  ])('$rule', ({ pools, req, ctx, rejected }) => {
    const result = place(req, pools, ctx);
    expect(result.rejected).toContainEqual({ ...rejected, reason: expect.stringMatching(rejected.reason) });
    expect(names(result.ranked)).not.toContain(rejected.pool);
  });

  it('lets a bounded pool with room and an unbounded pool under its limit through', () => {
    const result = place(
      request(),
      [
        pool('a', {
          capacity: {
            bounded: true,
            freeCPU: 2,
            freeMemoryMiB: 2048,
            largestFreeCPU: 1,
            largestFreeMemoryMiB: 1024,
          },
        }),
        pool('b', { config: { maxConcurrency: 2 }, active: 1 }),
      ],
      closed,
    );
    expect(names(result.ranked).sort()).toEqual(['a', 'b']);
  });
});

describe('placement: verdicts', () => {
  it('is unsupported (422) when capabilities alone exclude every permitted pool', () => {
    const result = place(request({ capabilities: ['gpu'] }), [pool('a'), pool('b'), ext()], closed);
    expect(result.verdict).toEqual({
      kind: 'unsupported',
      message: expect.stringMatching(/requested capabilities/),
    });
  });

  it('is never when nothing is permitted (external only, policy closed)', () => {
    const result = place(request(), [ext()], closed);
    expect(result.verdict.kind).toBe('never');
    expect(result.verdict).toMatchObject({ message: expect.stringMatching(/no pool is permitted/) });
  });

  it('is never when permanent reasons of several kinds exclude every pool', () => {
    const small = { maxCPU: 1, maxMemoryMiB: 0, maxDiskGiB: 0, templates: [] };
    const result = place(
      request({ capabilities: ['gpu'], resources: { cpu: 2, memoryMiB: 1024, diskGiB: 1 } }),
      [pool('a'), pool('b', { features: ['gpu'], capabilities: small })],
      closed,
    );
    expect(result.verdict.kind).toBe('never');
  });

  it('waits when a pool could take it later (unhealthy or full), even if others lack capabilities', () => {
    const result = place(
      request({ capabilities: ['files'] }),
      [pool('a', { features: ['exec'] }), pool('b', { healthy: false, unhealthyReason: 'probe failed' })],
      closed,
    );
    expect(result.verdict.kind).toBe('wait');
  });

  it('checks only what never changes at admission (staticOnly)', () => {
    const result = place(request(), [pool('a', { healthy: false })], closed, { staticOnly: true });
    expect(names(result.ranked)).toEqual(['a']);
    expect(result.verdict.kind).toBe('place');
  });
});

describe('placement: ranking', () => {
  it('puts private pools before external ones, whatever the cost', () => {
    const result = place(
      request(),
      [
        ext({ config: { trust: 'external', costModel: { cpuHour: 0, memoryGiBHour: 0 } } }),
        pool('priv', { config: { costModel: { cpuHour: 9, memoryGiBHour: 9 } } }),
      ],
      open,
    );
    expect(names(result.ranked)).toEqual(['priv', 'ext']);
  });

  it('then prefers the requested regions, in the order requested', () => {
    const result = place(
      request({ regions: ['eu-west-1', 'us-east-1'] }),
      [
        pool('none'),
        pool('us', { config: { region: 'us-east-1' } }),
        pool('eu', { config: { region: 'eu-west-1' } }),
      ],
      closed,
    );
    expect(names(result.ranked)).toEqual(['eu', 'us', 'none']);
  });

  it('then the estimated cost from the cost model', () => {
    const result = place(
      request(),
      [
        pool('dear', { config: { costModel: { cpuHour: 0.1, memoryGiBHour: 0.01 } } }),
        pool('cheap', { config: { costModel: { cpuHour: 0.02, memoryGiBHour: 0.01 } } }),
      ],
      closed,
    );
    expect(names(result.ranked)).toEqual(['cheap', 'dear']);
    expect(
      estimatedHourlyCost(
        { cpu: 2, memoryMiB: 2048, diskGiB: 1 },
        {
          config: {
            name: 'x',
            trust: 'private',
            maxConcurrency: 0,
            costModel: { cpuHour: 0.5, memoryGiBHour: 0.25 },
          },
        },
      ),
    ).toBe(1.5);
  });

  it('then the free room, then the operator order', () => {
    const result = place(
      request(),
      [
        pool('tight', { config: { maxConcurrency: 10 }, active: 9 }),
        pool('roomy', { config: { maxConcurrency: 10 }, active: 1 }),
        pool('first-unbounded'),
        pool('second-unbounded'),
      ],
      closed,
    );
    expect(names(result.ranked)).toEqual(['first-unbounded', 'second-unbounded', 'roomy', 'tight']);
  });
});

describe('placement: declaration-only features through EffectiveFeatures', () => {
  it('keeps declaration-only names a pool declares and drops interface-backed ones it cannot serve', () => {
    class ExecOnly extends FakeAdapter {}
    const adapter = new ExecOnly();
    // A plain object without the optional interfaces: only the required ones.
    const bare = {
      info: adapter.info.bind(adapter),
      capabilities: adapter.capabilities.bind(adapter),
      capacity: adapter.capacity.bind(adapter),
      health: adapter.health.bind(adapter),
      create: adapter.create.bind(adapter),
      get: adapter.get.bind(adapter),
      list: adapter.list.bind(adapter),
      delete: adapter.delete.bind(adapter),
      exec: adapter.exec.bind(adapter),
    };
    const features = effectiveFeatures(bare, [
      'exec',
      'files',
      'gpu',
      'network.egress-control',
      'arch.arm64',
    ]);
    expect(features).toEqual(['exec', 'gpu', 'network.egress-control', 'arch.arm64']);
    const result = place(request({ capabilities: ['gpu', 'arch.arm64'] }), [pool('a', { features })], closed);
    expect(names(result.ranked)).toEqual(['a']);
    const files = place(request({ capabilities: ['files'] }), [pool('a', { features })], closed);
    expect(files.verdict.kind).toBe('unsupported');
  });
});
