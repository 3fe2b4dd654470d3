import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { capacityFits } from '../../../lib/adapter/capacity.ts';
import { effectiveFeatures } from '../../../lib/adapter/features.ts';
import { type ExecutionAdapter, isFileSystem, isStreamer } from '../../../lib/adapter/port.ts';

/** An adapter with only the required interface. */
function bareAdapter(): ExecutionAdapter {
  const fake = new FakeAdapter();
  return {
    info: () => fake.info(),
    capabilities: () => fake.capabilities(),
    capacity: () => fake.capacity(),
    health: () => fake.health(),
    create: (request) => fake.create(request),
    get: (ref) => fake.get(ref),
    list: (installation) => fake.list(installation),
    delete: (ref) => fake.delete(ref),
    exec: (ref, request) => fake.exec(ref, request),
  };
}

describe('effectiveFeatures', () => {
  it('drops features whose optional interface the adapter lacks', () => {
    const declared = [
      'exec',
      'exec.stream',
      'files',
      'lifecycle.stop-start',
      'snapshots.disk',
      'fork',
      'ports.expose',
    ];
    expect(effectiveFeatures(bareAdapter(), declared)).toEqual(['exec']);
  });

  it('keeps every declared feature an adapter implements', () => {
    const fake = new FakeAdapter();
    const declared = [
      'exec',
      'exec.stream',
      'files',
      'lifecycle.pause-resume',
      'snapshots.memory',
      'ports.expose',
    ];
    expect(effectiveFeatures(fake, declared)).toEqual(declared);
    expect(isStreamer(fake) && isFileSystem(fake)).toBe(true);
  });

  it('passes declaration-only features through as declared', () => {
    const declared = ['network.egress-control', 'gpu', 'ssh', 'pty', 'arch.arm64', 'isolation.microvm'];
    expect(effectiveFeatures(bareAdapter(), declared)).toEqual(declared);
  });

  it('removes duplicates', () => {
    expect(effectiveFeatures(bareAdapter(), ['exec', 'exec'])).toEqual(['exec']);
  });
});

describe('capacityFits', () => {
  const small = { cpu: 2, memoryMiB: 2048, diskGiB: 10 };
  it('treats unbounded capacity as room', () => {
    expect(
      capacityFits(
        { bounded: false, freeCPU: 0, freeMemoryMiB: 0, largestFreeCPU: 0, largestFreeMemoryMiB: 0 },
        small,
      ),
    ).toBe(true);
  });
  it('judges bounded capacity by the roomiest single node, not the total', () => {
    const fragmented = {
      bounded: true,
      freeCPU: 8,
      freeMemoryMiB: 8192,
      largestFreeCPU: 1,
      largestFreeMemoryMiB: 8192,
    };
    expect(capacityFits(fragmented, small)).toBe(false);
    expect(capacityFits({ ...fragmented, largestFreeCPU: 2, largestFreeMemoryMiB: 2048 }, small)).toBe(true);
  });
});
