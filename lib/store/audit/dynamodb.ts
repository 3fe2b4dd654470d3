import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEvent, AuditInput, ChainHead } from '../../audit/chain.ts';
import { newId } from '../../ids.ts';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { keyOf } from '../dynamodb/items.ts';
import { isConditionFailed } from '../dynamodb/table-client.ts';
import type { Page, PageRequest } from '../page.ts';
import type { AuditStore } from './port.ts';

/** The audit aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbAudit(
  c: DynamoDbContext,
): AuditStore & { linkAudit(orgId: string, options?: { pending?: boolean }): Promise<void> } {
  let knownInstallation: string | undefined;

  function rememberInstallation(item: Record<string, unknown> | undefined): string {
    const id = item?.id;
    if (typeof id !== 'string') throw new Error('the installation item has no id');
    knownInstallation = id;
    return id;
  }

  const part: AuditStore & { linkAudit(orgId: string, options?: { pending?: boolean }): Promise<void> } = {
    async installation(): Promise<string> {
      if (knownInstallation !== undefined) return knownInstallation;
      const existing = await c.t.get(keyOf.installation());
      if (existing !== undefined) return rememberInstallation(existing);
      const id = newId('installation');
      try {
        await c.t.call((doc) =>
          doc.send(
            new PutCommand({
              TableName: c.table,
              Item: { ...keyOf.installation(), id },
              ConditionExpression: 'attribute_not_exists(PK)',
            }),
          ),
        );
        knownInstallation = id;
        return id;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        // Another cold start created it first: use theirs.
        return rememberInstallation(await c.t.get(keyOf.installation()));
      }
    },

    appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
      return c.audit.appendAudit(orgId, audit);
    },

    auditHead(orgId: string): Promise<ChainHead> {
      return c.audit.auditHead(orgId);
    },

    listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
      return c.audit.listAudit(orgId, page);
    },

    /** `pending`: a record was just written (what a change's inline link says), so no first look is taken. */
    linkAudit(orgId: string, options: { pending?: boolean } = {}): Promise<void> {
      return c.audit.linkAudit(orgId, options);
    },
  };
  return part;
}
