import { errors } from '../../errors.ts';
import { auditEventSchema, auditVerificationSchema, auditVerifyQuerySchema } from '../../schemas/audit.ts';
import { listQuerySchema, pageOf } from '../../schemas/common.ts';
import { readOrgAudit, verifyAllChains, verifyOrgChain } from '../../tenancy/audit-trail.ts';
import { errorSchema } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** The audit chain: an org's events, and the admin's verification of every chain. */
export function auditRoutes(deps: RouteDeps): RouteDefinition[] {
  const { tenancy, store } = deps;
  return [
    route({
      method: 'GET',
      path: '/v1/audit',
      summary: "The organization's audit events, oldest first (org-wide keys only)",
      auth: 'org',
      query: listQuerySchema,
      responses: { 200: pageOf(auditEventSchema), 403: errorSchema },
      handle: async ({ principal, query }) => ({
        status: 200,
        body: await readOrgAudit(store, principal, query),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/audit/verify',
      summary: 'Recompute audit chains (one org, or every org) and report the first broken link',
      auth: 'admin',
      query: auditVerifyQuerySchema,
      responses: { 200: auditVerificationSchema, 404: errorSchema },
      adminScope: 'org',
      handle: async ({ query, principal }) => {
        // An organization's administrator verifies its own chain, named or not; another org is 404.
        if (principal.orgId !== null) {
          if (query.orgId !== undefined && query.orgId !== principal.orgId)
            throw errors.notFound('org', query.orgId);
          return {
            status: 200,
            body: { orgId: principal.orgId, ...(await verifyOrgChain(store, principal.orgId)) },
          };
        }
        if (query.orgId !== undefined) {
          await tenancy.getOrg(query.orgId);
          return { status: 200, body: { orgId: query.orgId, ...(await verifyOrgChain(store, query.orgId)) } };
        }
        return { status: 200, body: await verifyAllChains(store) };
      },
    }),
  ];
}
