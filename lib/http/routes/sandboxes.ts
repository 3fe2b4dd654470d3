import { errors } from '../../errors.ts';
import { execResultText } from '../../sandboxes/exec-result-text.ts';
import { ndjsonStream } from '../../sandboxes/exec-stream.ts';
import { parseLabelFilter } from '../../sandboxes/label-filter.ts';
import { pageOf } from '../../schemas/common.ts';
import {
  createSandboxSchema,
  execRequestSchema,
  execResultSchema,
  sandboxListQuerySchema,
  sandboxSchema,
  updatedSandboxSchema,
  updateSandboxSchema,
} from '../../schemas/sandboxes.ts';
import * as z from '../../zod.ts';
import { errorSchema, sandboxAlong, sandboxParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

/** `?stream=1` (or `true`) streams; `0`, `false` or nothing waits for the command. */
const execQuerySchema = z.strictObject({ stream: z.optional(z.enum(['0', '1', 'true', 'false'])) });

function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
    throw errors.invalidRequest('Idempotency-Key must be 1 to 255 visible ASCII characters', {
      header: 'Idempotency-Key',
    });
  }
  return header;
}

/** Sandboxes: create, list, get, patch, delete, and exec (synchronous or streamed). */
export function sandboxesRoutes(deps: RouteDeps): RouteDefinition[] {
  const { sandboxes } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/sandboxes',
      summary:
        'Create a sandbox; it is queued and placed asynchronously, or answered running from a warm instance that matches',
      auth: 'org',
      body: createSandboxSchema,
      responses: {
        202: sandboxSchema,
        400: errorSchema,
        404: errorSchema,
        409: errorSchema,
        422: errorSchema,
        429: errorSchema,
      },
      readAlong: () => ({ org: true, poolsVersion: true }),
      tool: {
        name: 'create_sandbox',
        description:
          'Create a sandbox (template, resources, placement constraints, ttlSeconds, labels, env) and wait until it runs (wait: false answers at once, queued).',
        waits: true,
      },
      handle: async ({ principal, body, request }) => {
        const key = idempotencyKeyOf(request.headers['idempotency-key']);
        const { sandbox, replayed } = await sandboxes.create(principal, body, key);
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
      tool: {
        name: 'list_sandboxes',
        description: "List the caller's sandboxes (status, label=key=value filters, paged with cursor).",
      },
      handle: async ({ principal, query }) => ({
        status: 200,
        body: await sandboxes.list(
          principal,
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
      readAlong: sandboxAlong,
      tool: { name: 'get_sandbox', description: 'Get a sandbox: its status, pool, resources, expiry.' },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: await sandboxes.get(principal, params.id),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/sandboxes/{id}',
      summary: "Change a sandbox's TTL (expiresAt reset from now) or labels",
      auth: 'org',
      params: sandboxParams,
      body: updateSandboxSchema,
      // 429: a longer TTL whose reservation no budget covers.
      responses: {
        200: updatedSandboxSchema,
        404: errorSchema,
        409: errorSchema,
        429: errorSchema,
        503: errorSchema,
      },
      handle: async ({ principal, params, body }) => ({
        status: 200,
        body: await sandboxes.update(principal, params.id, body),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/sandboxes/{id}',
      summary: 'Terminate a sandbox',
      auth: 'org',
      params: sandboxParams,
      responses: { 202: sandboxSchema, 404: errorSchema },
      // The counts of waiting sandboxes too (the org's, any org's on the pools): where one is zero, its
      // waiters are not looked for (no query).
      readAlong: (raw) => ({ ...sandboxAlong(raw), waiting: true, waitingOnPools: true }),
      tool: {
        name: 'delete_sandbox',
        description: 'Terminate a sandbox; its instance is deleted shortly after.',
      },
      handle: async ({ principal, params }) => ({
        status: 202,
        body: await sandboxes.delete(principal, params.id),
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
      responses: {
        200: execResultSchema,
        404: errorSchema,
        409: errorSchema,
        501: errorSchema,
        503: errorSchema,
      },
      streamResponse: {
        mediaType: 'application/x-ndjson',
        description:
          'With ?stream=1: one JSON object a line, {"stream": "stdout"|"stderr", "data"} as produced, ending in {"exitCode"} or {"error": {"code", "message"}}; blank lines keep a silent command\'s connection open',
      },
      query: execQuerySchema,
      readAlong: sandboxAlong,
      streamed: true,
      tool: {
        name: 'exec',
        description:
          'Run a command in a running sandbox and return its exit code, stdout and stderr (each bounded; truncation is said). A client that sends a progressToken receives the output lines as progress notifications while the command runs.',
        text: (body) => execResultText(execResultSchema.parse(body), deps.config.api.execOutputMaxBytes),
      },
      handle: async ({ principal, params, body, query, request }) => {
        if (query.stream === '1' || query.stream === 'true') {
          // A client that disconnects cancels the command on the backend.
          const produce = await sandboxes.execStream(principal, params.id, body, request.signal);
          return {
            status: 200,
            headers: { 'content-type': 'application/x-ndjson' },
            stream: ndjsonStream(produce),
          };
        }
        return { status: 200, body: await sandboxes.exec(principal, params.id, body) };
      },
    }),
  ];
}
