import type { MemoryState } from '../memory-state.ts';
import type { LeaseStore } from './port.ts';

/** The leases aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memoryLeases(s: MemoryState): LeaseStore {
  const part: LeaseStore = {
    async acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean> {
      const held = s.leases.get(name);
      if (held !== undefined && held.owner !== owner && held.until > now) return false;
      s.leases.set(name, { owner, until });
      return true;
    },

    async releaseLease(name: string, owner: string): Promise<void> {
      if (s.leases.get(name)?.owner === owner) s.leases.delete(name);
    },
  };
  return part;
}
