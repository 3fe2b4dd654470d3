import { type AuditEvent, type AuditInput, type ChainHead, genesisHead } from '../../audit/chain.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { MemoryState } from '../memory-state.ts';
import type { Page, PageRequest } from '../page.ts';
import type { AuditStore } from './port.ts';

/** The audit aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memoryAudit(s: MemoryState): AuditStore {
  const part: AuditStore = {
    async installation(): Promise<string> {
      return s.installation;
    },

    async appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
      return structuredClone(s.append(orgId, audit));
    },

    async auditHead(orgId: string): Promise<ChainHead> {
      return { ...(s.heads.get(orgId) ?? genesisHead) };
    },

    async listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
      const events = s.audit.get(orgId) ?? [];
      const after = Number(decodeCursor(page.cursor) ?? '0');
      const slice = events.filter((event) => event.seq > after).slice(0, page.limit);
      const last = slice.at(-1);
      const more = last !== undefined && events.some((event) => event.seq > last.seq);
      return { items: structuredClone(slice), nextCursor: more ? encodeCursor(String(last.seq)) : null };
    },

    async linkAudit(): Promise<void> {
      // Events are chained as they are written: nothing waits.
    },
  };
  return part;
}
