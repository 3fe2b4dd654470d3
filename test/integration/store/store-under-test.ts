import type { AuditEvent } from '../../../lib/audit/chain.ts';
import { ApiError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import type { SandboxStatus } from '../../../lib/schemas/sandbox-status.ts';
import { type Quota, quotaSchema } from '../../../lib/schemas/tenancy-parts.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { OrgRecord, SandboxRecord } from '../../../lib/store/records.ts';
import { sandboxRecord } from '../../helpers/records.ts';

/** Direct access to stored audit events, to prove tampering is detected. */
export interface AuditTamper {
  rewrite(orgId: string, seq: number, change: (event: AuditEvent) => AuditEvent): Promise<void>;
  remove(orgId: string, seq: number): Promise<void>;
}

export interface StoreUnderTest {
  /** A fresh, empty store; two calls with `shared` give two handles on the same state. */
  create(options?: { shared?: boolean; now?: () => Date }): Promise<Store>;
  tamper(store: Store): AuditTamper;
}

export const admin = { actor: 'admin', action: 'test', target: 'x', details: {} };
export const system = (action: string) => ({ actor: 'system', action, target: 'sbx', details: {} });

export async function newOrg(store: Store, quota: Partial<Quota> = {}): Promise<OrgRecord> {
  const org: OrgRecord = {
    id: newId('org'),
    name: 'org',
    quota: quotaSchema.parse(quota),
    idlePolicy: null,
    networkPolicy: null,
    budget: null,
    createdAt: new Date().toISOString(),
  };
  await store.createOrg(org, { ...admin, action: 'org.created', target: org.id });
  return org;
}

export async function created(store: Store, orgId: string, overrides: Partial<SandboxRecord> = {}) {
  const record = sandboxRecord(orgId, overrides);
  await store.createSandbox(record, system('sandbox.created'));
  return record;
}

export async function move(
  store: Store,
  record: SandboxRecord,
  status: SandboxStatus,
  pool = 'p1',
  poolLimit?: number,
) {
  return store.updateSandbox(
    record,
    { status, pool, updatedAt: new Date().toISOString() },
    { audit: system(`sandbox.${status}`), ...(poolLimit !== undefined && { poolLimit }) },
  );
}

export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
}

/** The behaviour every Store implementation must have; run against each in test/integration. */
