import { listQuerySchema, pageOf } from '../../schemas/common.ts';
import {
  createWebhookSchema,
  deliveryRecordDays,
  webhookDeliveryStatusSchema,
  webhookParams,
  webhookViewSchema,
  webhookWithSecretSchema,
} from '../../schemas/webhooks.ts';
import * as z from '../../zod.ts';
import { errorSchema, orgParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** An org's webhook endpoints (docs/webhooks.md): its own administrator may manage them. */
export function webhookRoutes(deps: RouteDeps): RouteDefinition[] {
  const { webhooks } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/admin/orgs/{id}/webhooks',
      summary:
        "Register an HTTPS endpoint for the org's lifecycle events; the answer holds its signing secret, once",
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      body: createWebhookSchema,
      responses: { 201: webhookWithSecretSchema, 400: errorSchema, 404: errorSchema, 429: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 201,
        body: await webhooks.create(params.id, body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/webhooks',
      summary: "List the org's webhook endpoints (never their secrets)",
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      responses: {
        200: z.object({ items: z.array(webhookViewSchema), nextCursor: z.null() }),
        404: errorSchema,
      },
      handle: async ({ params }) => ({ status: 200, body: await webhooks.list(params.id) }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/admin/orgs/{id}/webhooks/{webhookId}',
      summary: 'Remove a webhook endpoint: deliveries still queued for it are dropped',
      auth: 'admin',
      adminScope: 'org',
      params: webhookParams,
      responses: { 200: z.object({ id: z.string(), deleted: z.literal(true) }), 404: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 200,
        body: await webhooks.delete(params.id, params.webhookId, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/webhooks/{webhookId}/deliveries',
      summary: `An endpoint's deliveries, newest first (kept ${deliveryRecordDays} days): attempts, the last answer or error, when delivered`,
      auth: 'admin',
      adminScope: 'org',
      params: webhookParams,
      query: listQuerySchema,
      responses: { 200: pageOf(webhookDeliveryStatusSchema), 400: errorSchema, 404: errorSchema },
      handle: async ({ params, query }) => ({
        status: 200,
        body: await webhooks.deliveries(params.id, params.webhookId, query),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/admin/orgs/{id}/webhooks/{webhookId}/rotate-secret',
      summary: 'A new signing secret; the previous one keeps signing for 24 hours beside it',
      auth: 'admin',
      adminScope: 'org',
      params: webhookParams,
      responses: { 200: webhookWithSecretSchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 200,
        body: await webhooks.rotateSecret(params.id, params.webhookId, principal.keyId),
      }),
    }),
  ];
}
