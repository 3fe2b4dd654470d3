import type { Store } from '../store/port.ts';
import { type AuditEvent, type ChainVerification, verifyChain } from './chain.ts';

/** Every event of an org's chain, in seq order, page by page. */
export async function* auditEvents(store: Store, orgId: string, pageSize = 100): AsyncGenerator<AuditEvent> {
  let cursor: string | undefined;
  do {
    const page = await store.listAudit(orgId, { cursor, limit: pageSize });
    yield* page.items;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** Recomputes an org's chain from its first event and reports the first broken link. */
export async function verifyOrgChain(store: Store, orgId: string): Promise<ChainVerification> {
  const head = await store.auditHead(orgId);
  return verifyChain(auditEvents(store, orgId), head);
}
