import type { Resources } from '../schemas/sandbox-parts.ts';
import type { Capacity } from './port.ts';

/** The report of a backend that has no capacity figure of its own: the pool's maxConcurrency governs. */
export function unboundedCapacity(): Capacity {
  return { bounded: false, freeCPU: 0, freeMemoryMiB: 0, largestFreeCPU: 0, largestFreeMemoryMiB: 0 };
}

/** Whether a capacity report has room for one sandbox of this size. */
export function capacityFits(capacity: Capacity, resources: Resources): boolean {
  if (!capacity.bounded) return true;
  return capacity.largestFreeCPU >= resources.cpu && capacity.largestFreeMemoryMiB >= resources.memoryMiB;
}
