import type { AuditEvent, AuditInput, ChainHead } from '../../audit/chain.ts';
import type { Page, PageRequest } from '../page.ts';

/**
 * The audit aggregate: each org's hash chain (and the installation's), appended to in the same atomic
 * write as the change it records, linked, read and its head.
 */
export interface AuditStore {
  /** The installation id, created once per store and stable afterwards. */
  installation(): Promise<string>;

  appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent>;

  /** Links audit records still waiting to enter the org's chain (stores that defer linking). */
  linkAudit(orgId: string): Promise<void>;

  auditHead(orgId: string): Promise<ChainHead>;

  /** Events in seq order; the cursor continues after the last event returned. */
  listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>>;
}

/** The audit chain that records installation-wide changes (pools, policy), verified like an org's. */
export const installationChain = 'installation';
