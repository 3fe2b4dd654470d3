import { errors } from '../../errors.ts';
import { type Usage, zeroUsage } from '../../quotas/usage.ts';
import type { Quota } from '../../schemas/tenancy-parts.ts';
import { type OrgRecord, orgRecordSchema, usageSchema } from '../records.ts';
import type { AuditOutbox } from './audit-outbox.ts';
import { keyOf } from './items.ts';
import type { TableClient } from './table-client.ts';

/** What every aggregate's DynamoDB part works with: the table, its audit outbox and the clock. */
export interface DynamoDbContext {
  t: TableClient;
  audit: AuditOutbox;
  now: () => Date;
  table: string;
}

/** An org's record: read by tenancy and by the writes that check an org's quota. */
export async function orgOf(c: DynamoDbContext, id: string): Promise<OrgRecord | undefined> {
  return c.t.getParsed(keyOf.org(id), orgRecordSchema);
}

/** An org's usage item (zero before its first sandbox): read by tenancy, sandboxes and snapshots. */
export async function usageOf(c: DynamoDbContext, orgId: string): Promise<Usage> {
  const item = await c.t.get(keyOf.usage(orgId));
  return item === undefined ? { ...zeroUsage } : usageSchema.parse(item);
}

/** The quota of an org that must exist (not_found otherwise). */
export async function quotaOf(c: DynamoDbContext, orgId: string): Promise<Quota> {
  const org = await orgOf(c, orgId);
  if (org === undefined) throw errors.notFound('org', orgId);
  return org.quota;
}
