import { setBudgetSchema } from '../../budgets/ledger.ts';
import { listQuerySchema, pageOf } from '../../schemas/common.ts';
import type { OrgView } from '../../schemas/tenancy.ts';
import {
  budgetViewSchema,
  createdKeySchema,
  createKeySchema,
  createOrgSchema,
  createProjectSchema,
  keySchema,
  orgSchema,
  orgUsageSchema,
  projectParams,
  projectSchema,
  setIdlePolicySchema,
  setNetworkPolicySchema,
  setQuotaSchema,
} from '../../schemas/tenancy.ts';
import { orgView } from '../../tenancy/tenancy.ts';
import type * as z from '../../zod.ts';
import { errorSchema, keyParams, orgParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** Organizations, their keys, projects and quotas (admin), and what an org uses. */
export function tenancyRoutes(deps: RouteDeps): RouteDefinition[] {
  const { tenancy } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/admin/orgs',
      summary: 'Create an organization',
      auth: 'admin',
      body: createOrgSchema,
      responses: { 201: orgSchema, 400: errorSchema },
      handle: async ({ body, principal }) => ({
        status: 201,
        body: await tenancy.createOrg(body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs',
      summary: 'List organizations',
      auth: 'admin',
      query: listQuerySchema,
      responses: { 200: pageOf(orgSchema) },
      adminScope: 'org',
      // An organization's administrator sees its own organization only.
      handle: async ({ query, principal }) => {
        if (principal.orgId === null) return { status: 200, body: await tenancy.listOrgs(query) };
        const org = await tenancy.getOrg(principal.orgId);
        return {
          status: 200,
          body: {
            items: [orgView(org)],
            nextCursor: null,
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}',
      summary: 'Get an organization',
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      responses: { 200: orgSchema, 404: errorSchema },
      handle: async ({ params }) => ({ status: 200, body: orgView(await tenancy.getOrg(params.id)) }),
    }),
    route({
      method: 'POST',
      path: '/v1/admin/orgs/{id}/keys',
      summary: 'Create an API key for an organization; the secret is returned only here',
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      body: createKeySchema,
      responses: { 201: createdKeySchema, 404: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 201,
        body: await tenancy.createKey(params.id, body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/keys',
      summary: "List an organization's API keys (never their secrets)",
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      query: listQuerySchema,
      responses: { 200: pageOf(keySchema) },
      handle: async ({ params, query }) => ({ status: 200, body: await tenancy.listKeys(params.id, query) }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/admin/keys/{id}',
      summary: 'Revoke an API key; it is refused from its next call on',
      auth: 'admin',
      adminScope: 'org',
      params: keyParams,
      responses: { 200: keySchema, 404: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 200,
        body: await tenancy.revokeKey(params.id, principal.keyId, principal.orgId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/admin/orgs/{id}/projects',
      summary: 'Create a project in an organization; keys and sandboxes can be restricted to it',
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      body: createProjectSchema,
      responses: { 201: projectSchema, 400: errorSchema, 404: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 201,
        body: await tenancy.createProject(params.id, body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/projects',
      summary: "List an organization's projects",
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      query: listQuerySchema,
      responses: { 200: pageOf(projectSchema), 404: errorSchema },
      handle: async ({ params, query }) => ({
        status: 200,
        body: await tenancy.listProjects(params.id, query),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/admin/orgs/{id}/quota',
      summary:
        "Change some of an organization's limits; below current usage, new work waits and nothing stops",
      auth: 'admin',
      params: orgParams,
      body: setQuotaSchema,
      responses: { 200: orgSchema, 400: errorSchema, 404: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 200,
        body: await tenancy.setQuota(params.id, body, principal.keyId),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/admin/orgs/{id}/budget',
      summary:
        "Set an organization's monthly budget (null: none); below what is reserved and spent, new work waits and nothing stops",
      auth: 'admin',
      params: orgParams,
      body: setBudgetSchema,
      responses: { 200: budgetViewSchema, 400: errorSchema, 404: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 200,
        body: await tenancy.setBudget(params.id, null, body, principal.keyId),
      }),
    }),
    orgDefaultRoute(
      'idle-policy',
      "Set an organization's default idle policy (null: none); sandboxes created afterwards take it unless they or their template name one",
      setIdlePolicySchema,
      (orgId, body, actor) => tenancy.setIdlePolicy(orgId, body.policy, actor),
    ),
    orgDefaultRoute(
      'network-policy',
      "Set an organization's default egress policy (null: none); sandboxes created afterwards take it unless they or their template name one, and the installation's deny-list still holds",
      setNetworkPolicySchema,
      (orgId, body, actor) => tenancy.setNetworkPolicy(orgId, body.policy, actor),
    ),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/budget',
      summary: "This month's budget of an organization: spent, reserved and left",
      auth: 'admin',
      adminScope: 'org',
      params: orgParams,
      responses: { 200: budgetViewSchema, 404: errorSchema },
      handle: async ({ params }) => ({ status: 200, body: await tenancy.budget(params.id, null) }),
    }),
    route({
      method: 'PUT',
      path: '/v1/admin/orgs/{id}/projects/{projectId}/budget',
      summary: "Set a project's monthly budget, counted besides its organization's (null: none of its own)",
      auth: 'admin',
      adminScope: 'org',
      params: projectParams,
      body: setBudgetSchema,
      responses: { 200: budgetViewSchema, 400: errorSchema, 404: errorSchema },
      handle: async ({ params, body, principal }) => ({
        status: 200,
        body: await tenancy.setBudget(params.id, params.projectId, body, principal.keyId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}/projects/{projectId}/budget',
      summary: "This month's budget of a project: spent, reserved and left",
      auth: 'admin',
      adminScope: 'org',
      params: projectParams,
      responses: { 200: budgetViewSchema, 404: errorSchema },
      handle: async ({ params }) => ({
        status: 200,
        body: await tenancy.budget(params.id, params.projectId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/admin/keys/{id}/rotate',
      summary: 'Rotate a key: a new key with the same org, name, role and project; the old one is revoked',
      auth: 'admin',
      adminScope: 'org',
      params: keyParams,
      responses: { 201: createdKeySchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 201,
        body: await tenancy.rotateKey(params.id, principal.keyId, principal.orgId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/usage',
      summary: "The organization's quota and budget, what it holds and spent now, and what is left",
      auth: 'org',
      responses: { 200: orgUsageSchema },
      handle: async ({ principal }) => ({
        status: 200,
        body: await tenancy.usage(principal.orgId, principal.projectId),
      }),
    }),
  ];
}

/** PUT /v1/admin/orgs/{id}/<name>: one of an org's defaults for new sandboxes (its own admin may set it). */
function orgDefaultRoute<B extends z.ZodMiniType>(
  name: string,
  summary: string,
  body: B,
  set: (orgId: string, body: z.infer<B>, actor: string) => Promise<OrgView>,
): RouteDefinition {
  return route({
    method: 'PUT',
    path: `/v1/admin/orgs/{id}/${name}`,
    summary,
    auth: 'admin',
    adminScope: 'org',
    params: orgParams,
    body,
    responses: { 200: orgSchema, 400: errorSchema, 404: errorSchema },
    handle: async ({ params, body: value, principal }) => ({
      status: 200,
      body: await set(params.id, value, principal.keyId),
    }),
  });
}
