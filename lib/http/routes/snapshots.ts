import { snapshotView } from '../../sandboxes/sandbox-operations.ts';
import { listQuerySchema, pageOf } from '../../schemas/common.ts';
import {
  snapshotDeletedSchema,
  snapshotParams,
  snapshotRequestSchema,
  snapshotSchema,
} from '../../schemas/sandbox-operations.ts';
import { errorSchema, sandboxParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** Snapshots: taken from a sandbox, listed, read and deleted. */
export function snapshotsRoutes(deps: RouteDeps): RouteDefinition[] {
  const { operations } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/snapshots',
      summary:
        'Snapshot a running, stopped or paused sandbox (counted against maxSnapshots): 201 when taken within the wait, 202 while still creating',
      auth: 'org',
      params: sandboxParams,
      body: snapshotRequestSchema,
      tool: {
        name: 'snapshot_sandbox',
        description:
          'Take a snapshot of a sandbox (disk, or memory where the pool offers it); restore it with create_sandbox fromSnapshot.',
      },
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
        const { value, pending } = await operations.snapshot(principal, params.id, body.kind);
        return { status: pending ? 202 : 201, body: snapshotView(value) };
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
        const page = await operations.listSnapshots(principal, query);
        return { status: 200, body: { items: page.items.map(snapshotView), nextCursor: page.nextCursor } };
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
        body: snapshotView(await operations.getSnapshot(principal, params.id)),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/snapshots/{id}',
      summary:
        'Delete a snapshot (its record always; the backend snapshot when reachable, else named as left behind)',
      auth: 'org',
      params: snapshotParams,
      responses: { 200: snapshotDeletedSchema, 404: errorSchema, 409: errorSchema, 503: errorSchema },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: await operations.deleteSnapshot(principal, params.id),
      }),
    }),
  ];
}
