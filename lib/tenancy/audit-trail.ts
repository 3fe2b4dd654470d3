import { type AuditEvent, type ChainVerification, verifyChain } from '../audit/chain.ts';
import { errors } from '../errors.ts';
import type { AuditStore } from '../store/audit/port.ts';
import { installationChain } from '../store/audit/port.ts';
import type { Page, PageRequest } from '../store/page.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import type { OrgPrincipal } from './auth.ts';

/** Every event of an org's chain, in seq order, page by page. */
export async function* auditEvents(
  store: TenancyStore & AuditStore,
  orgId: string,
  pageSize = 100,
): AsyncGenerator<AuditEvent> {
  let cursor: string | undefined;
  do {
    const page = await store.listAudit(orgId, { cursor, limit: pageSize });
    yield* page.items;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** Recomputes an org's chain from its first event and reports the first broken link. */
export async function verifyOrgChain(
  store: TenancyStore & AuditStore,
  orgId: string,
): Promise<ChainVerification> {
  const head = await store.auditHead(orgId);
  return verifyChain(auditEvents(store, orgId), head);
}

/**
 * An org's audit events, oldest first. The chain is the organization's and records every project's
 * objects: a project-restricted key may not read it.
 */
export async function readOrgAudit(
  store: TenancyStore & AuditStore,
  principal: OrgPrincipal,
  page: PageRequest,
): Promise<Page<AuditEvent>> {
  if (principal.projectId !== null) {
    throw errors.forbidden("the audit chain is the organization's: a project-restricted key cannot read it");
  }
  return store.listAudit(principal.orgId, page);
}

/** Every chain verified: the installation's own (pools, policy) first, then every org's; the first break ends it. */
export async function verifyAllChains(
  store: TenancyStore & AuditStore,
): Promise<ChainVerification & { orgId?: string }> {
  const installation = await verifyOrgChain(store, installationChain);
  if (!installation.ok) return { ...installation, orgId: installationChain };
  let checked = installation.checked;
  let cursor: string | undefined;
  do {
    const page = await store.listOrgs({ cursor, limit: 100 });
    for (const org of page.items) {
      const result = await verifyOrgChain(store, org.id);
      checked += result.checked;
      if (!result.ok) return { ...result, orgId: org.id, checked };
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return { ok: true, checked };
}
