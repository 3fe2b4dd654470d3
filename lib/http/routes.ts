import { z } from 'zod';
import { verifyOrgChain } from '../audit/verify.ts';
import { errors } from '../errors.ts';
import { idPattern } from '../ids.ts';
import { ndjsonStream } from '../sandboxes/exec-stream.ts';
import { maxFileBytes, type SandboxOperations } from '../sandboxes/operations.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import type { ReconcileReport } from '../scheduler/reconcile.ts';
import { reconcileReportSchema } from '../schemas/admin.ts';
import { auditEventSchema, auditVerificationSchema, auditVerifyQuerySchema } from '../schemas/audit.ts';
import { listQuerySchema, pageOf } from '../schemas/common.ts';
import {
  fileListSchema,
  pathQuerySchema,
  portRequestSchema,
  portSchema,
  snapshotDeletedSchema,
  snapshotParams,
  snapshotRequestSchema,
  snapshotSchema,
} from '../schemas/operations.ts';
import {
  createSandboxSchema,
  execRequestSchema,
  execResultSchema,
  sandboxListQuerySchema,
  sandboxSchema,
  updatedSandboxSchema,
  updateSandboxSchema,
} from '../schemas/sandboxes.ts';
import {
  createdKeySchema,
  createKeySchema,
  createOrgSchema,
  keySchema,
  orgSchema,
} from '../schemas/tenancy.ts';
import { installationChain, type Store } from '../store/port.ts';
import type { SnapshotRecord } from '../store/records.ts';
import { requireOrg } from '../tenancy/auth.ts';
import type { Tenancy } from '../tenancy/tenancy.ts';
import { errorSchema, keyParams, orgParams } from './route-params.ts';
import { type RouteDefinition, route } from './types.ts';

export interface RouteDeps {
  tenancy: Tenancy;
  sandboxes: SandboxService;
  operations: SandboxOperations;
  store: Store;
  reconcile: () => Promise<ReconcileReport>;
}

const sandboxParams = z.strictObject({
  id: z.string().regex(idPattern('sandbox'), 'a sandbox id (sbx_...)'),
});

/** `team=a,tier=gold` -> { team: 'a', tier: 'gold' } */
function parseLabelFilter(filter: string | undefined): Record<string, string> | undefined {
  if (filter === undefined) return undefined;
  const labels: Record<string, string> = {};
  for (const pair of filter.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw errors.invalidRequest(`label filter ${pair} is not key=value`, { field: 'label' });
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}

/** A snapshot as tenants see it: the backend's ref stays inside. */
function publicSnapshot(snapshot: SnapshotRecord) {
  const { backendRef: _backendRef, ...visible } = snapshot;
  return { ...visible, updatedAt: snapshot.updatedAt ?? snapshot.createdAt };
}

const longer = '; 202 with the transitional status when the backend needs longer than the API waits';
const lifecycleActions = [
  {
    action: 'stop',
    summary: `Stop a running sandbox: its disk stays; cpu and memory leave quota usage${longer}`,
  },
  {
    action: 'start',
    summary: `Start a stopped sandbox: cpu and memory are reserved again (429 when they no longer fit)${longer}`,
  },
  { action: 'pause', summary: `Pause a running sandbox with its memory kept${longer}` },
  { action: 'resume', summary: `Resume a paused sandbox${longer}` },
] as const;

/** `?stream=1` (or `true`) streams; `0`, `false` or nothing waits for the command. */
const execQuerySchema = z.strictObject({ stream: z.enum(['0', '1', 'true', 'false']).optional() });

function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
    throw errors.invalidRequest('Idempotency-Key must be 1 to 255 visible ASCII characters', {
      header: 'Idempotency-Key',
    });
  }
  return header;
}

export function apiRoutes(deps: RouteDeps): RouteDefinition[] {
  const { tenancy, sandboxes, operations, store, reconcile } = deps;
  return [
    route({
      method: 'GET',
      path: '/v1/health',
      summary: 'Liveness of the API',
      auth: 'none',
      responses: { 200: z.object({ status: z.literal('ok') }) },
      handle: async () => ({ status: 200, body: { status: 'ok' } }),
    }),

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
      handle: async ({ query }) => ({ status: 200, body: await tenancy.listOrgs(query) }),
    }),
    route({
      method: 'GET',
      path: '/v1/admin/orgs/{id}',
      summary: 'Get an organization',
      auth: 'admin',
      params: orgParams,
      responses: { 200: orgSchema, 404: errorSchema },
      handle: async ({ params }) => {
        const org = await tenancy.getOrg(params.id);
        return {
          status: 200,
          body: { id: org.id, name: org.name, quota: org.quota, createdAt: org.createdAt },
        };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/admin/orgs/{id}/keys',
      summary: 'Create an API key for an organization; the secret is returned only here',
      auth: 'admin',
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
      params: keyParams,
      responses: { 200: keySchema, 404: errorSchema },
      handle: async ({ params, principal }) => ({
        status: 200,
        body: await tenancy.revokeKey(params.id, principal.keyId),
      }),
    }),

    route({
      method: 'POST',
      path: '/v1/sandboxes',
      summary: 'Create a sandbox; it is queued and placed asynchronously',
      auth: 'org',
      body: createSandboxSchema,
      responses: { 202: sandboxSchema, 400: errorSchema },
      handle: async ({ principal, body, request }) => {
        const key = idempotencyKeyOf(request.headers['idempotency-key']);
        const { sandbox, replayed } = await sandboxes.create(requireOrg(principal), body, key);
        const headers: Record<string, string> = replayed ? { 'idempotent-replayed': 'true' } : {};
        return { status: 202, body: sandbox, headers };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes',
      summary: "List the organization's sandboxes",
      auth: 'org',
      query: sandboxListQuerySchema,
      responses: { 200: pageOf(sandboxSchema) },
      handle: async ({ principal, query }) => ({
        status: 200,
        body: await sandboxes.list(
          requireOrg(principal),
          { status: query.status, projectId: query.projectId, labels: parseLabelFilter(query.label) },
          { cursor: query.cursor, limit: query.limit },
        ),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}',
      summary: 'Get a sandbox',
      auth: 'org',
      params: sandboxParams,
      responses: { 200: sandboxSchema, 404: errorSchema },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: await sandboxes.get(requireOrg(principal), params.id),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/sandboxes/{id}',
      summary: "Change a sandbox's TTL (expiresAt reset from now) or labels",
      auth: 'org',
      params: sandboxParams,
      body: updateSandboxSchema,
      responses: { 200: updatedSandboxSchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ principal, params, body }) => ({
        status: 200,
        body: await sandboxes.update(requireOrg(principal), params.id, body),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/sandboxes/{id}',
      summary: 'Terminate a sandbox',
      auth: 'org',
      params: sandboxParams,
      responses: { 202: sandboxSchema, 404: errorSchema },
      handle: async ({ principal, params }) => ({
        status: 202,
        body: await sandboxes.delete(requireOrg(principal), params.id),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/exec',
      summary:
        'Run a command in a running sandbox: wait for it, or with ?stream=1 (or true) receive NDJSON output lines as produced, ending in one {"exitCode"} or {"error": {"code", "message"}}',
      auth: 'org',
      params: sandboxParams,
      body: execRequestSchema,
      responses: { 200: execResultSchema, 404: errorSchema, 409: errorSchema },
      query: execQuerySchema,
      handle: async ({ principal, params, body, query, request }) => {
        if (query.stream === '1' || query.stream === 'true') {
          // A client that disconnects cancels the command on the backend.
          const produce = await sandboxes.execStream(requireOrg(principal), params.id, body, request.signal);
          return {
            status: 200,
            headers: { 'content-type': 'application/x-ndjson' },
            stream: ndjsonStream(produce),
          };
        }
        return { status: 200, body: await sandboxes.exec(requireOrg(principal), params.id, body) };
      },
    }),

    route({
      method: 'GET',
      path: '/v1/audit',
      summary: "The organization's audit events, oldest first (org-wide keys only)",
      auth: 'org',
      query: listQuerySchema,
      responses: { 200: pageOf(auditEventSchema), 403: errorSchema },
      handle: async ({ principal, query }) => {
        const org = requireOrg(principal);
        // The chain is the organization's and records every project's objects: not for project keys.
        if (org.projectId !== null) {
          throw errors.forbidden(
            "the audit chain is the organization's: a project-restricted key cannot read it",
          );
        }
        return { status: 200, body: await store.listAudit(org.orgId, query) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/admin/audit/verify',
      summary: 'Recompute audit chains (one org, or every org) and report the first broken link',
      auth: 'admin',
      query: auditVerifyQuerySchema,
      responses: { 200: auditVerificationSchema, 404: errorSchema },
      handle: async ({ query }) => {
        if (query.orgId !== undefined) {
          await tenancy.getOrg(query.orgId);
          return { status: 200, body: { orgId: query.orgId, ...(await verifyOrgChain(store, query.orgId)) } };
        }
        // The installation's own chain (pools, policy) first, then every org's.
        const installation = await verifyOrgChain(store, installationChain);
        if (!installation.ok) return { status: 200, body: { ...installation, orgId: installationChain } };
        let checked = installation.checked;
        let cursor: string | undefined;
        do {
          const page = await store.listOrgs({ cursor, limit: 100 });
          for (const org of page.items) {
            const result = await verifyOrgChain(store, org.id);
            checked += result.checked;
            if (!result.ok) return { status: 200, body: { ...result, orgId: org.id, checked } };
          }
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        return { status: 200, body: { ok: true, checked } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/admin/reconcile',
      summary: 'Run a reconcile pass now and return what it did per pool',
      auth: 'admin',
      responses: { 200: reconcileReportSchema },
      handle: async () => ({ status: 200, body: await reconcile() }),
    }),
    ...lifecycleActions.map(({ action, summary }) =>
      route({
        method: 'POST',
        path: `/v1/sandboxes/{id}/${action}`,
        summary,
        auth: 'org',
        params: sandboxParams,
        responses: {
          200: sandboxSchema,
          202: sandboxSchema,
          404: errorSchema,
          409: errorSchema,
          429: errorSchema,
          501: errorSchema,
          503: errorSchema,
        },
        handle: async ({ principal, params }) => {
          const { value, pending } = await operations.lifecycle(requireOrg(principal), params.id, action);
          // 202: the backend needs longer than the API waits; the record is in its transitional status.
          return { status: pending ? 202 : 200, body: value };
        },
      }),
    ),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/files',
      summary: 'List a directory of a running sandbox',
      auth: 'org',
      params: sandboxParams,
      query: pathQuerySchema,
      responses: { 200: fileListSchema, 404: errorSchema, 409: errorSchema, 501: errorSchema },
      handle: async ({ principal, params, query }) => ({
        status: 200,
        body: { items: await operations.listFiles(requireOrg(principal), params.id, query.path) },
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/files/content',
      summary: `Read a file's bytes (at most ${maxFileBytes} bytes through the API)`,
      auth: 'org',
      params: sandboxParams,
      query: pathQuerySchema,
      responses: { 200: null, 404: errorSchema, 409: errorSchema, 413: errorSchema, 501: errorSchema },
      handle: async ({ principal, params, query }) => ({
        status: 200,
        raw: await operations.readFile(requireOrg(principal), params.id, query.path),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/sandboxes/{id}/files/content',
      summary: `Write a file's bytes, creating parent directories (at most ${maxFileBytes} bytes)`,
      auth: 'org',
      params: sandboxParams,
      query: pathQuerySchema,
      rawBody: { maxBytes: maxFileBytes },
      responses: { 204: null, 404: errorSchema, 409: errorSchema, 413: errorSchema, 501: errorSchema },
      handle: async ({ principal, params, query, request }) => {
        await operations.writeFile(
          requireOrg(principal),
          params.id,
          query.path,
          request.body ?? Buffer.alloc(0),
        );
        return { status: 204 };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/snapshots',
      summary:
        'Snapshot a running, stopped or paused sandbox (counted against maxSnapshots): 201 when taken within the wait, 202 while still creating',
      auth: 'org',
      params: sandboxParams,
      body: snapshotRequestSchema,
      responses: {
        201: snapshotSchema,
        202: snapshotSchema,
        404: errorSchema,
        409: errorSchema,
        429: errorSchema,
        501: errorSchema,
        503: errorSchema,
      },
      handle: async ({ principal, params, body }) => {
        const { value, pending } = await operations.snapshot(requireOrg(principal), params.id, body.kind);
        return { status: pending ? 202 : 201, body: publicSnapshot(value) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/snapshots',
      summary: "List the organization's snapshots",
      auth: 'org',
      query: listQuerySchema,
      responses: { 200: pageOf(snapshotSchema) },
      handle: async ({ principal, query }) => {
        const page = await operations.listSnapshots(requireOrg(principal), query);
        return { status: 200, body: { items: page.items.map(publicSnapshot), nextCursor: page.nextCursor } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/snapshots/{id}',
      summary: 'Get a snapshot',
      auth: 'org',
      params: snapshotParams,
      responses: { 200: snapshotSchema, 404: errorSchema },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: publicSnapshot(await operations.getSnapshot(requireOrg(principal), params.id)),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/snapshots/{id}',
      summary:
        'Delete a snapshot (its record always; the backend snapshot when reachable, else named as left behind)',
      auth: 'org',
      params: snapshotParams,
      responses: { 200: snapshotDeletedSchema, 404: errorSchema, 409: errorSchema },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: await operations.deleteSnapshot(requireOrg(principal), params.id),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/fork',
      summary: "Fork a sandbox: a snapshot, then a child on the snapshot's pool with the parent's settings",
      auth: 'org',
      params: sandboxParams,
      responses: {
        202: sandboxSchema,
        404: errorSchema,
        409: errorSchema,
        429: errorSchema,
        501: errorSchema,
      },
      handle: async ({ principal, params }) => ({
        status: 202,
        body: await operations.fork(requireOrg(principal), params.id),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/ports',
      summary: 'Expose a guest port and return its URL',
      auth: 'org',
      params: sandboxParams,
      body: portRequestSchema,
      responses: { 200: portSchema, 404: errorSchema, 409: errorSchema, 501: errorSchema },
      handle: async ({ principal, params, body }) => ({
        status: 200,
        body: await operations.exposePort(requireOrg(principal), params.id, body.port),
      }),
    }),
  ];
}
