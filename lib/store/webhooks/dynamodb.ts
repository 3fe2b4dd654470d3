import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import {
  type DeliveryAttempt,
  deliveryRecordDays,
  maxWebhooksPerOrg,
  type WebhookDeliveryStatus,
  type WebhookRecord,
  webhookDeliveryStatusSchema,
  webhookRecordSchema,
} from '../../schemas/webhooks.ts';
import { decodeCursor } from '../cursor.ts';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { keyOf, orgPartition, sortPrefix } from '../dynamodb/items.ts';
import { check, del, onCanceled, put } from '../dynamodb/table-client.ts';
import { webhooksExceeded } from '../errors.ts';
import type { Page, PageRequest } from '../page.ts';
import { deliverySortKey, type WebhookStore } from './port.ts';

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
          ExpressionAttributeValues: { ':pk': orgPartition(orgId), ':prefix': sortPrefix.webhooks },
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

    async recordDeliveryAttempt(attempt: DeliveryAttempt): Promise<void> {
      const { delivery } = attempt;
      const delivered = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
      await c.t.call((doc) =>
        doc.send(
          new UpdateCommand({
            TableName: c.table,
            Key: keyOf.webhookDelivery(
              attempt.orgId,
              deliverySortKey(attempt.webhookId, delivery.createdAt, delivery.id),
            ),
            // The first attempt makes the record; the first 2xx sets deliveredAt (absent until then, so that
            // if_not_exists sees it missing), and a later duplicate keeps it.
            UpdateExpression: `SET #id = :id, webhookId = :webhook, #type = :type, sandboxId = :sandbox, createdAt = :created, lastAttemptAt = :at, lastStatus = :status, lastError = :error, #ttl = :ttl${delivered ? ', deliveredAt = if_not_exists(deliveredAt, :at)' : ''} ADD attempts :one`,
            ExpressionAttributeNames: { '#id': 'id', '#type': 'type', '#ttl': 'ttl' },
            ExpressionAttributeValues: {
              ':id': delivery.id,
              ':webhook': attempt.webhookId,
              ':type': delivery.type,
              ':sandbox': delivery.sandboxId,
              ':created': delivery.createdAt,
              ':at': attempt.at,
              ':status': attempt.status,
              ':error': attempt.error,
              ':ttl': Math.floor(Date.parse(attempt.at) / 1000) + deliveryRecordDays * 86_400,
              ':one': 1,
            },
          }),
        ),
      );
    },

    async listDeliveries(
      orgId: string,
      webhookId: string,
      page: PageRequest,
    ): Promise<Page<WebhookDeliveryStatus>> {
      const after = decodeCursor(page.cursor);
      const partition = keyOf.webhookDelivery(orgId, '');
      const first = keyOf.webhookDelivery(orgId, `${webhookId}#`).SK;
      return c.t.queryPage(
        {
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :low AND :high',
          ExpressionAttributeValues: {
            ':pk': partition.PK,
            // Just past the cursor's item (keys are printable, so NUL sorts before any next one).
            ':low': after === undefined ? first : `${keyOf.webhookDelivery(orgId, after).SK}\u0000`,
            ':high': `${first}\uffff`,
          },
        },
        page.limit,
        // Not yet delivered: the item has no deliveredAt.
        (item) => webhookDeliveryStatusSchema.parse({ deliveredAt: null, ...item }),
        (delivery) => deliverySortKey(delivery.webhookId, delivery.createdAt, delivery.id),
      );
    },
  };
  return part;
}
