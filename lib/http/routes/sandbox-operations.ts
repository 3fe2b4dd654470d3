import { maxFileBytes } from '../../sandboxes/sandbox-operations.ts';
import {
  fileListSchema,
  pathQuerySchema,
  portRequestSchema,
  portSchema,
} from '../../schemas/sandbox-operations.ts';
import { sandboxSchema } from '../../schemas/sandboxes.ts';
import { errorSchema, sandboxParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

const longer = '; 202 with the transitional status when the backend needs longer than the API waits';
const lifecycleActions = [
  {
    action: 'stop',
    summary: `Stop a running sandbox: its disk stays; cpu and memory leave quota usage${longer}`,
    tool: 'Stop a sandbox: its CPU and memory leave the quota, its disk stays. Answers once stopped (or still stopping, if the backend is slow).',
  },
  {
    action: 'start',
    summary: `Start a stopped sandbox: cpu and memory are reserved again (429 when they no longer fit)${longer}`,
    tool: 'Start a stopped sandbox. Answers once running (or still starting).',
  },
  {
    action: 'pause',
    summary: `Pause a running sandbox with its memory kept${longer}`,
    tool: 'Pause a sandbox, memory kept where the backend can. Answers once paused (or still pausing).',
  },
  {
    action: 'resume',
    summary: `Resume a paused sandbox${longer}`,
    tool: 'Resume a paused sandbox. Answers once running (or still resuming).',
  },
] as const;

/** What a running sandbox does besides exec: lifecycle calls, files, fork and ports. */
export function operationsRoutes(deps: RouteDeps): RouteDefinition[] {
  const { operations } = deps;
  return [
    ...lifecycleActions.map(({ action, summary, tool }) =>
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
        tool: { name: `${action}_sandbox`, description: tool },
        handle: async ({ principal, params }) => {
          const { value, pending } = await operations.lifecycle(principal, params.id, action);
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
      tool: { name: 'list_files', description: 'List a directory of a running sandbox.' },
      params: sandboxParams,
      query: pathQuerySchema,
      responses: {
        200: fileListSchema,
        404: errorSchema,
        409: errorSchema,
        501: errorSchema,
        503: errorSchema,
      },
      handle: async ({ principal, params, query }) => ({
        status: 200,
        body: { items: await operations.listFiles(principal, params.id, query.path) },
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/files/content',
      summary: `Read a file's bytes (at most ${maxFileBytes} bytes through the API)`,
      auth: 'org',
      tool: {
        name: 'read_file',
        description: 'Read a file of a running sandbox (UTF-8 text; binary content comes base64-encoded).',
      },
      params: sandboxParams,
      query: pathQuerySchema,
      responses: {
        200: null,
        404: errorSchema,
        409: errorSchema,
        413: errorSchema,
        501: errorSchema,
        503: errorSchema,
      },
      handle: async ({ principal, params, query }) => ({
        status: 200,
        raw: await operations.readFile(principal, params.id, query.path),
      }),
    }),
    route({
      method: 'PUT',
      path: '/v1/sandboxes/{id}/files/content',
      summary: `Write a file's bytes, creating parent directories (at most ${maxFileBytes} bytes)`,
      auth: 'org',
      tool: {
        name: 'write_file',
        description:
          'Write a file in a running sandbox: `content` as UTF-8 text, or `contentBase64` for bytes.',
      },
      params: sandboxParams,
      query: pathQuerySchema,
      rawBody: { maxBytes: maxFileBytes },
      responses: {
        204: null,
        404: errorSchema,
        409: errorSchema,
        413: errorSchema,
        501: errorSchema,
        503: errorSchema,
      },
      handle: async ({ principal, params, query, request }) => {
        await operations.writeFile(principal, params.id, query.path, request.body ?? Buffer.alloc(0));
        return { status: 204 };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/fork',
      summary: "Fork a sandbox: a snapshot, then a child on the snapshot's pool with the parent's settings",
      auth: 'org',
      tool: {
        name: 'fork_sandbox',
        description: 'Fork a sandbox: a new sandbox from a snapshot of this one.',
      },
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
        body: await operations.fork(principal, params.id),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/ports',
      summary: 'Expose a guest port and return its URL',
      auth: 'org',
      tool: { name: 'expose_port', description: 'Expose a port of a running sandbox at a URL.' },
      params: sandboxParams,
      body: portRequestSchema,
      responses: { 200: portSchema, 404: errorSchema, 409: errorSchema, 501: errorSchema, 503: errorSchema },
      handle: async ({ principal, params, body }) => ({
        status: 200,
        body: await operations.exposePort(principal, params.id, body.port),
      }),
    }),
  ];
}
