import { ndjsonStream } from '../../sandboxes/exec-stream.ts';
import {
  processListSchema,
  processOutputQuerySchema,
  processOutputSchema,
  processSchema,
  signalSchema,
  startProcessSchema,
  stdinSchema,
  terminalSizeSchema,
} from '../../schemas/processes.ts';
import * as z from '../../zod.ts';
import { errorSchema, sandboxAlong, sandboxParams } from '../route-params.ts';
import { type RouteDefinition, route } from '../types.ts';
import type { RouteDeps } from './deps.ts';

const processParams = z.extend(sandboxParams, {
  pid: z.coerce.number().check(z.int(), z.gte(0), z.lte(4_294_967_295)),
});

/** Every refusal a process call can meet: the sandbox, the process, the pool's features, the bounds. */
const refusals = {
  404: errorSchema,
  409: errorSchema,
  429: errorSchema,
  501: errorSchema,
  503: errorSchema,
};

/**
 * Interactive processes: start, then attach (streamed), write stdin, resize, signal, each a request of its
 * own that any container answers (lib/sandboxes/processes.ts).
 */
export function processRoutes(deps: RouteDeps): RouteDefinition[] {
  const { processes } = deps;
  return [
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/processes',
      summary:
        'Start an interactive process (stdin written later; with `pty`, in a terminal): it runs until it exits, its timeout, or the sandbox stops; attach to read its output',
      auth: 'org',
      params: sandboxParams,
      body: startProcessSchema,
      readAlong: sandboxAlong,
      responses: { 201: processSchema, 400: errorSchema, ...refusals },
      tool: {
        name: 'start_process',
        description:
          'Start a long-lived process in a running sandbox (a REPL, a shell, a server) whose input you write later with write_to_process and whose output you read with read_process_output.',
      },
      handle: async ({ principal, params, body }) => ({
        status: 201,
        body: await processes.start(principal, params.id, body),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/processes',
      summary: 'List the interactive processes of a sandbox: running ones, and ended ones for five minutes',
      auth: 'org',
      params: sandboxParams,
      readAlong: sandboxAlong,
      responses: { 200: processListSchema, ...refusals },
      tool: { name: 'list_processes', description: 'List the interactive processes of a running sandbox.' },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: { items: await processes.list(principal, params.id) },
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/processes/{pid}',
      summary: 'One interactive process',
      auth: 'org',
      params: processParams,
      readAlong: sandboxAlong,
      responses: { 200: processSchema, ...refusals },
      handle: async ({ principal, params }) => ({
        status: 200,
        body: await processes.get(principal, params.id, params.pid),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/processes/{pid}/attach',
      summary:
        'Attach to a process: NDJSON lines, {"process"} first, then its unread output and what it prints ({"stream", "data"}), ending in {"exitCode"}, {"detached"} when the stream reached its 14 minutes (attach again) or {"error"}',
      auth: 'org',
      params: processParams,
      readAlong: sandboxAlong,
      responses: { 200: null, ...refusals },
      rawResponse: {
        mediaTypes: ['application/x-ndjson'],
        description:
          'One JSON object a line: {"process"}, then {"stream": "stdout"|"stderr", "data"} as produced, ending in {"exitCode"}, {"detached": {"reason"}} or {"error": {"code", "message"}}; blank lines keep a silent process\'s connection open',
      },
      streamed: true,
      handle: async ({ principal, params, request }) => {
        const produce = await processes.attach(principal, params.id, params.pid, request.signal);
        return {
          status: 200,
          headers: { 'content-type': 'application/x-ndjson' },
          stream: ndjsonStream(produce),
        };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/processes/{pid}/stdin',
      summary:
        "Write to a process's stdin (text as `data` or bytes as `dataBase64`, 64 KiB at most a request); `close: true` ends its input after",
      auth: 'org',
      params: processParams,
      body: stdinSchema,
      readAlong: sandboxAlong,
      responses: { 204: null, 400: errorSchema, ...refusals },
      tool: {
        name: 'write_to_process',
        description:
          'Write text to the stdin of a process started with start_process (end a line with \\n; close: true ends its input).',
      },
      handle: async ({ principal, params, body }) => {
        await processes.stdin(principal, params.id, params.pid, body);
        return { status: 204 };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/sandboxes/{id}/processes/{pid}/output',
      summary:
        'What a process printed since the last attach or read, without waiting (`exitCode` once it ended and everything was read)',
      auth: 'org',
      params: processParams,
      query: processOutputQuerySchema,
      readAlong: sandboxAlong,
      responses: { 200: processOutputSchema, ...refusals },
      tool: {
        name: 'read_process_output',
        description:
          'Read what a process started with start_process printed since the last read (stdout, stderr, and its exit code once it ended).',
      },
      handle: async ({ principal, params, query }) => ({
        status: 200,
        body: await processes.output(principal, params.id, params.pid, query.maxBytes ?? 256 * 1024),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/processes/{pid}/resize',
      summary: "Resize a process's terminal",
      auth: 'org',
      params: processParams,
      body: terminalSizeSchema,
      readAlong: sandboxAlong,
      responses: { 204: null, 400: errorSchema, ...refusals },
      handle: async ({ principal, params, body }) => {
        await processes.resize(principal, params.id, params.pid, body);
        return { status: 204 };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/sandboxes/{id}/processes/{pid}/signal',
      summary: 'Send a signal to a process (and the process group it leads)',
      auth: 'org',
      params: processParams,
      body: signalSchema,
      readAlong: sandboxAlong,
      responses: { 204: null, 400: errorSchema, ...refusals },
      tool: {
        name: 'signal_process',
        description: 'Send a signal (SIGINT, SIGTERM, SIGKILL, ...) to a process.',
      },
      handle: async ({ principal, params, body }) => {
        await processes.signal(principal, params.id, params.pid, body.signal);
        return { status: 204 };
      },
    }),
  ];
}
