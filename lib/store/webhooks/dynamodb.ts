import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { maxWebhooksPerOrg, type WebhookRecord, webhookRecordSchema } from '../../schemas/webhooks.ts';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { keyOf, orgPartition } from '../dynamodb/items.ts';
import { check, del, onCanceled, put } from '../dynamodb/table-client.ts';
import { webhooksExceeded } from '../errors.ts';
import type { WebhookStore } from './port.ts';

/** The webhooks aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbWebhooks(c: DynamoDbContext): WebhookStore {
  const part: WebhookStore = {
    async createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void> {
      await c.audit
        .write(webhook.orgId, audit, () => [
          check('org', keyOf.org(webhook.orgId), 'attribute_exists(PK)'),
          {
            label: 'count',
            item: {
              Update: {
                TableName: c.table,
                Key: keyOf.webhookCount(webhook.orgId),
                UpdateExpression: 'ADD webhooks :one',
                ConditionExpression: 'attribute_not_exists(webhooks) OR webhooks < :max',
                ExpressionAttributeValues: { ':one': 1, ':max': max },
              },
            },
          },
          put(
            'webhook',
            { ...keyOf.webhook(webhook.orgId, webhook.id), ...webhook },
            'attribute_not_exists(PK)',
          ),
        ])
        .catch(
          onCanceled((failed) =>
            failed.has('org')
              ? errors.notFound('org', webhook.orgId)
              : failed.has('count')
                ? webhooksExceeded(max)
                : errors.conflict(`webhook ${webhook.id} already exists`),
          ),
        );
    },

    async getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined> {
      return c.t.getParsed(keyOf.webhook(orgId, id), webhookRecordSchema);
    },

    async listWebhooks(orgId: string): Promise<WebhookRecord[]> {
      const page = await c.t.queryPage(
        {
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': orgPartition(orgId), ':prefix': 'WHK#' },
          ConsistentRead: true,
        },
        maxWebhooksPerOrg,
        (item) => webhookRecordSchema.parse(item),
        (webhook) => webhook.id,
      );
      return page.items;
    },

    async updateWebhookSecrets(
      current: WebhookRecord,
      secrets: WebhookRecord['secrets'],
      audit: AuditInput,
    ): Promise<void> {
      await c.audit
        .write(current.orgId, audit, () => [
          put(
            'webhook',
            { ...keyOf.webhook(current.orgId, current.id), ...current, secrets },
            '#secrets = :secrets',
            {
              names: { '#secrets': 'secrets' },
              values: { ':secrets': current.secrets },
            },
          ),
        ])
        .catch(onCanceled(() => errors.conflict(`webhook ${current.id} changed since it was read`)));
    },

    async deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void> {
      await c.audit
        .write(orgId, audit, () => [
          del('webhook', keyOf.webhook(orgId, id), 'attribute_exists(PK)'),
          {
            label: 'count',
            item: {
              Update: {
                TableName: c.table,
                Key: keyOf.webhookCount(orgId),
                UpdateExpression: 'ADD webhooks :minus',
                ExpressionAttributeValues: { ':minus': -1 },
              },
            },
          },
        ])
        .catch(onCanceled(() => errors.notFound('webhook', id)));
    },
  };
  return part;
}
