import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import type { CallOptions, Capabilities } from '../../../lib/adapter/port.ts';
import { parseConfig } from '../../../lib/config.ts';
import { silentLog } from '../../../lib/log.ts';

/** A backend whose capabilities answer only once `ready` has happened, or fail when the probe gives up. */
class WaitingAdapter extends FakeAdapter {
  readonly ready: Promise<void>;

  constructor(ready: Promise<void>) {
    super();
    this.ready = ready;
  }

  override async capabilities(opts?: CallOptions): Promise<Capabilities> {
    const gaveUp = new Promise<never>((_, reject) =>
      opts?.signal?.addEventListener('abort', () => reject(new Error('probe timed out')), { once: true }),
    );
    // The probe's timer runs on after a pool that answered: its late rejection is nobody's to handle.
    gaveUp.catch(() => {});
    await Promise.race([this.ready, gaveUp]);
    return super.capabilities();
  }
}

/** A backend that says when it was first asked for its capabilities. */
class SignallingAdapter extends FakeAdapter {
  asked!: () => void;
  readonly wasAsked = new Promise<void>((resolve) => {
    this.asked = resolve;
  });

  override async capabilities(): Promise<Capabilities> {
    this.asked();
    return super.capabilities();
  }
}

const config = parseConfig({
  pools: [
    { name: 'slow', adapter: 'fake', maxConcurrency: 1 },
    { name: 'quick', adapter: 'fake', maxConcurrency: 1 },
  ],
});

describe('building the configured pools at a cold start', () => {
  it('probes them side by side: a pool waiting on its probe does not hold up the next one', async () => {
    // The first pool answers only once the second has been asked: built one after the other, the first
    // would wait for its probe timeout and start unreachable.
    const quick = new SignallingAdapter();
    const slow = new WaitingAdapter(quick.wasAsked);
    const warnings: unknown[] = [];
    const log = {
      ...silentLog,
      warn: (message: string, extra?: unknown) => warnings.push({ message, extra }),
    };
    const registry = await buildPools(config, { log, adapters: { slow, quick }, probeTimeoutMs: 2_000 });
    expect(registry.list().map((pool) => [pool.config.name, pool.capabilities === null])).toEqual([
      ['slow', false],
      ['quick', false],
    ]);
    expect(warnings).toEqual([]);
  });

  it('keeps the config order, and names the pools whose probe failed', async () => {
    const quick = new FakeAdapter();
    const never = new WaitingAdapter(new Promise(() => {}));
    const warnings: { message: string; extra?: unknown }[] = [];
    const log = {
      ...silentLog,
      warn: (message: string, extra?: unknown) => warnings.push({ message, extra }),
    };
    const registry = await buildPools(config, { log, adapters: { slow: never, quick }, probeTimeoutMs: 50 });
    expect(registry.list().map((pool) => [pool.config.name, pool.capabilities === null])).toEqual([
      ['slow', true],
      ['quick', false],
    ]);
    expect(warnings).toContainEqual({
      message: 'pools unreachable at cold start; their features come from the next probe',
      extra: { pools: ['slow'] },
    });
  });
});
