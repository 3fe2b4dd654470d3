import { trustReport } from '../../placement/trust.ts';
import {
  createPoolSchema,
  policySchema,
  policyViewSchema,
  poolDeletedSchema,
  poolParams,
  poolSchema,
  templateViewSchema,
  trustReportSchema,
  updatePoolSchema,
} from '../../pools/admin-schemas.ts';
import { reconcileReportSchema } from '../../schemas/admin.ts';
import { pageOf } from '../../schemas/common.ts';
import * as z from '../../zod.ts';
import { errorSchema } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** Pools and placement: pools and the policy at runtime (admin), templates, the trust report, reconcile now. */
export function poolsRoutes(deps: RouteDeps): RouteDefinition[] {
  const { reconcile, poolAdmin, pools, config, store } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/admin/reconcile',
      summary: 'Run a reconcile pass now and return what it did per pool',
      auth: 'admin',
      responses: { 200: reconcileReportSchema },
      handle: async () => ({ status: 200, body: await reconcile() }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/pools',
      summary: 'List pools (config file and admin API) with health, capabilities, capacity and active count',
      auth: 'admin',
      responses: { 200: pageOf(poolSchema) },
      handle: async () => ({ status: 200, body: { items: await poolAdmin.list(), nextCursor: null } }),
    }),
    route({
      method: 'POST',
      path: '/v1/admin/pools',
      summary:
        'Register a pool at runtime; validated by building it (adapter kind, its config, the credential reference)',
      auth: 'admin',
      body: createPoolSchema,
      responses: { 201: poolSchema, 400: errorSchema, 409: errorSchema },
      handle: async ({ body, principal }) => ({
        status: 201,
        body: await poolAdmin.create(body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/pools/{name}',
      summary:
        'A pool with its health, capabilities, capacity and active count as pool-refresh last saw them',
      auth: 'admin',
      params: poolParams,
      responses: { 200: poolSchema, 404: errorSchema },
      handle: async ({ params }) => ({ status: 200, body: await poolAdmin.get(params.name) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/admin/pools/{name}',
      summary: 'Change a pool registered through the API (config-file pools change by deploy: 409)',
      auth: 'admin',
      params: poolParams,
      body: updatePoolSchema,
      responses: { 200: poolSchema, 400: errorSchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 200,
        body: await poolAdmin.update(params.name, body, principal.keyId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/admin/pools/{name}',
      summary: 'Remove a pool registered through the API; refused (409) while it has live sandboxes',
      auth: 'admin',
      params: poolParams,
      responses: { 200: poolDeletedSchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 200,
        body: await poolAdmin.delete(params.name, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/policy',
      summary: 'The global placement policy in force, and whether it comes from the config file or the API',
      auth: 'admin',
      responses: { 200: policyViewSchema },
      handle: async () => ({ status: 200, body: await poolAdmin.policy() }),
    }),
    route({
      method: 'PUT',
      path: '/v1/admin/policy',
      summary: 'Replace the global placement policy (external placement allowed, which external pools)',
      auth: 'admin',
      body: policySchema,
      responses: { 200: policyViewSchema, 400: errorSchema },
      handle: async ({ body, principal }) => ({
        status: 200,
        body: await poolAdmin.setPolicy(body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/templates',
      summary: 'Templates this installation offers',
      auth: 'org',
      responses: { 200: z.object({ items: z.array(templateViewSchema) }) },
      handle: async () => ({ status: 200, body: { items: config.templates } }),
    }),
    route({
      method: 'GET',
      path: '/v1/trust',
      summary:
        "The trust report: each pool's operator, declared isolation, features and limitations; the placement policy",
      auth: 'org',
      responses: { 200: trustReportSchema },
      handle: async () => ({ status: 200, body: await trustReport(pools, config, store) }),
    }),
  ];
}
