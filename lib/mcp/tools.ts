import { McpServer, type ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { ApiError, isErrorCode, toErrorResponse } from '../errors.ts';
import { idPattern } from '../ids.ts';
import { describeError, type Log } from '../log.ts';
import { parseLabelFilter } from '../sandboxes/label-filter.ts';
import type { SandboxOperations } from '../sandboxes/sandbox-operations.ts';
import { snapshotView } from '../sandboxes/sandbox-operations.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import { pathQuerySchema, portRequestSchema, snapshotRequestSchema } from '../schemas/sandbox-operations.ts';
import { isTerminal } from '../schemas/sandbox-status.ts';
import {
  createSandboxSchema,
  type ExecResult,
  execRequestSchema,
  type SandboxView,
  sandboxListQuerySchema,
} from '../schemas/sandboxes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import type { UnreadBound } from './unread-bound.ts';

/** What the tools act through: the same services, with the same caller, as the REST routes. */
export interface McpToolDeps {
  sandboxes: SandboxService;
  operations: SandboxOperations;
  principal: OrgPrincipal;
  log: Log;
  /** How many bytes of each of stdout and stderr an exec returns (the API's own bound). */
  execOutputMaxBytes: number;
  /** The HTTP request's end: a client that goes away cancels its running command, as over REST. */
  gone?: AbortSignal | undefined;
  /** What the answer's client has not read yet: a streamed exec waits while it is over its bound. */
  unread?: UnreadBound | undefined;
}

export const mcpServerInfo = { name: 'differently', version: '0.1.0' };

const lifecycleDescriptions = {
  stop: 'Stop a sandbox: its CPU and memory leave the quota, its disk stays. Answers once stopped (or still stopping, if the backend is slow).',
  start: 'Start a stopped sandbox. Answers once running (or still starting).',
  pause: 'Pause a sandbox, memory kept where the backend can. Answers once paused (or still pausing).',
  resume: 'Resume a paused sandbox. Answers once running (or still resuming).',
};

/** Statuses a create waits through before answering (it answers at once with wait: false). */
const settling = new Set(['queued', 'provisioning']);
/** How long create_sandbox waits for the sandbox to run: well inside the streamed function's limit. */
const createWaitSeconds = 120;

const sandboxId = z.string().regex(idPattern('sandbox'), 'a sandbox id (sbx_...)');
const onSandbox = z.strictObject({ id: sandboxId.describe('The sandbox id (sbx_...)') });

/**
 * The MCP server of one request: every tool runs as the caller (an org key, maybe restricted to a
 * project), through the services the REST routes use, with their validation and their errors. Input
 * schemas are the router's own zod schemas.
 */
export function createMcpServer(deps: McpToolDeps): McpServer {
  const server = new McpServer(mcpServerInfo, {
    instructions:
      'Differently runs sandboxes: create one (it waits until running), run commands in it with exec, move files with read_file, write_file and list_files, and delete it when done.',
  });
  const { sandboxes, operations, principal } = deps;
  const tool = <S extends z.ZodObject>(
    name: string,
    description: string,
    inputSchema: S,
    run: (input: z.output<S>, extra: ToolExtra) => Promise<CallToolResult>,
  ) => {
    const handle = async (input: z.output<S>, extra: ToolExtra): Promise<CallToolResult> => {
      try {
        return await run(input, extra);
      } catch (error) {
        return errorResult(error, deps.log, name);
      }
    };
    // The SDK types a callback by a conditional on its schema, which TypeScript cannot resolve for a
    // generic one; the schema given and the input taken are the same S.
    server.registerTool(name, { description, inputSchema }, handle as unknown as ToolCallback<S>);
  };

  tool(
    'create_sandbox',
    'Create a sandbox (template, resources, placement constraints, ttlSeconds, labels, env) and wait until it runs (wait: false answers at once, queued).',
    createSandboxSchema.safeExtend({
      wait: z.boolean().default(true).describe('Wait until the sandbox is running (or failed)'),
    }),
    async ({ wait, ...request }) => {
      const { sandbox } = await sandboxes.create(principal, request);
      return viewResult(wait ? await untilSettled(sandboxes, principal, sandbox) : sandbox);
    },
  );
  tool(
    'list_sandboxes',
    "List the caller's sandboxes (status, label=key=value filters, paged with cursor).",
    sandboxListQuerySchema,
    async (query) => {
      const labels = parseLabelFilter(query.label);
      const page = await sandboxes.list(
        principal,
        { status: query.status, projectId: query.projectId, labels },
        { cursor: query.cursor, limit: query.limit },
      );
      return jsonResult(page);
    },
  );
  tool('get_sandbox', 'Get a sandbox: its status, pool, resources, expiry.', onSandbox, async ({ id }) =>
    viewResult(await sandboxes.get(principal, id)),
  );
  tool(
    'exec',
    'Run a command in a running sandbox and return its exit code, stdout and stderr (each bounded; truncation is said). A client that sends a progressToken receives the output lines as progress notifications while the command runs.',
    execRequestSchema.safeExtend({ id: sandboxId.describe('The sandbox id (sbx_...)') }),
    async ({ id, ...request }, extra) => {
      const token = extra._meta?.progressToken;
      if (token === undefined) return execResult(await sandboxes.exec(principal, id, request), deps);
      return execResult(await streamedExec(deps, id, request, token, extra), deps);
    },
  );
  tool(
    'read_file',
    'Read a file of a running sandbox (UTF-8 text; binary content comes base64-encoded).',
    onSandbox.extend(pathQuerySchema.shape),
    async ({ id, path }) => {
      const content = await operations.readFile(principal, id, path);
      const text = content.toString('utf8');
      const binary = !Buffer.from(text, 'utf8').equals(content);
      return binary
        ? {
            content: [{ type: 'text', text: content.toString('base64') }],
            structuredContent: { path, encoding: 'base64', size: content.length },
          }
        : {
            content: [{ type: 'text', text }],
            structuredContent: { path, encoding: 'utf8', size: content.length },
          };
    },
  );
  tool(
    'write_file',
    'Write a file in a running sandbox: `content` as UTF-8 text, or `contentBase64` for bytes.',
    onSandbox
      .extend(pathQuerySchema.shape)
      .extend({
        content: z.string().optional(),
        contentBase64: z.base64().optional(),
      })
      .refine((input) => (input.content === undefined) !== (input.contentBase64 === undefined), {
        message: 'send exactly one of content or contentBase64',
        path: ['content'],
      }),
    async ({ id, path, content, contentBase64 }) => {
      const bytes =
        contentBase64 !== undefined
          ? Buffer.from(contentBase64, 'base64')
          : Buffer.from(content ?? '', 'utf8');
      await operations.writeFile(principal, id, path, bytes);
      return jsonResult({ path, size: bytes.length });
    },
  );
  tool(
    'list_files',
    'List a directory of a running sandbox.',
    onSandbox.extend(pathQuerySchema.shape),
    async ({ id, path }) => jsonResult({ items: await operations.listFiles(principal, id, path) }),
  );
  for (const action of ['stop', 'start', 'pause', 'resume'] as const) {
    tool(`${action}_sandbox`, lifecycleDescriptions[action], onSandbox, async ({ id }) =>
      viewResult((await operations.lifecycle(principal, id, action)).value),
    );
  }
  tool(
    'snapshot_sandbox',
    'Take a snapshot of a sandbox (disk, or memory where the pool offers it); restore it with create_sandbox fromSnapshot.',
    onSandbox.extend(snapshotRequestSchema.shape),
    async ({ id, kind }) => {
      const { value } = await operations.snapshot(principal, id, kind);
      return jsonResult(snapshotView(value));
    },
  );
  tool(
    'fork_sandbox',
    'Fork a sandbox: a new sandbox from a snapshot of this one.',
    onSandbox,
    async ({ id }) => viewResult(await operations.fork(principal, id)),
  );
  tool(
    'expose_port',
    'Expose a port of a running sandbox at a URL.',
    onSandbox.extend(portRequestSchema.shape),
    async ({ id, port }) => jsonResult(await operations.exposePort(principal, id, port)),
  );
  tool(
    'delete_sandbox',
    'Terminate a sandbox; its instance is deleted shortly after.',
    onSandbox,
    async ({ id }) => viewResult(await sandboxes.delete(principal, id)),
  );
  return server;
}

/** What a tool callback gets beside its input: the request's signal, its progress token, notifications. */
type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

function jsonResult(value: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent:
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : { value },
  };
}

function viewResult(sandbox: SandboxView): CallToolResult {
  return jsonResult(sandbox);
}

/** The API's error as a tool error: its code and message (internal errors masked, logged with their cause). */
function errorResult(error: unknown, log: Log, tool: string): CallToolResult {
  const { body, masked } = toErrorResponse(error);
  if (masked) log.error('MCP tool failed', { tool, error: describeError(error) });
  return {
    isError: true,
    content: [{ type: 'text', text: `${body.error.code}: ${body.error.message}` }],
    structuredContent: body,
  };
}

function execResult(result: ExecResult, deps: McpToolDeps): CallToolResult {
  const notes = [
    result.truncated ? `output truncated at ${deps.execOutputMaxBytes} bytes per stream` : '',
    result.timedOut ? 'the command timed out' : '',
  ].filter((note) => note !== '');
  const text = [
    `exit code: ${result.exitCode}`,
    ...notes,
    result.stdout === '' ? '' : `--- stdout ---\n${result.stdout}`,
    result.stderr === '' ? '' : `--- stderr ---\n${result.stderr}`,
  ]
    .filter((part) => part !== '')
    .join('\n');
  return { content: [{ type: 'text', text }], structuredContent: result };
}

/**
 * Exec through the streamed path: each output chunk goes to the client as a progress notification as it
 * is produced; the result holds the output up to the bound, as the buffered exec does.
 */
async function streamedExec(
  deps: McpToolDeps,
  id: string,
  request: z.infer<typeof execRequestSchema>,
  progressToken: string | number,
  extra: ToolExtra,
): Promise<ExecResult> {
  const started = Date.now();
  const cancelled = deps.gone === undefined ? extra.signal : AbortSignal.any([extra.signal, deps.gone]);
  const produce = await deps.sandboxes.execStream(deps.principal, id, request, cancelled);
  const output = {
    stdout: new BoundedText(deps.execOutputMaxBytes),
    stderr: new BoundedText(deps.execOutputMaxBytes),
  };
  let exitCode: number | undefined;
  let failure: { code: string; message: string } | undefined;
  let progress = 0;
  await produce(async (line) => {
    if ('stream' in line) {
      output[line.stream].add(line.data);
      progress += 1;
      const notification = {
        method: 'notifications/progress' as const,
        params: { progressToken, progress, message: `${line.stream}: ${line.data}` },
      };
      await extra.sendNotification(notification);
      // As the transport frames it: an SSE event around the JSON-RPC message.
      deps.unread?.handed(
        Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', ...notification })) + sseFraming,
      );
      await deps.unread?.room(cancelled);
    } else if ('exitCode' in line) exitCode = line.exitCode;
    else failure = line.error;
  });
  const failed: { code: string; message: string } | undefined = failure;
  if (failed !== undefined) {
    throw new ApiError(isErrorCode(failed.code) ? failed.code : 'internal', failed.message);
  }
  return {
    exitCode: exitCode ?? -1,
    stdout: output.stdout.text(),
    stderr: output.stderr.text(),
    durationMs: Date.now() - started,
    truncated: output.stdout.truncated || output.stderr.truncated,
    timedOut: false,
  };
}

/** `event: message\ndata: ` and the blank line after: what the transport adds around each message. */
const sseFraming = 24;

/** Text kept up to a byte bound, cut on a character boundary. */
class BoundedText {
  readonly #max: number;
  #parts: Buffer[] = [];
  #bytes = 0;
  truncated = false;
  constructor(max: number) {
    this.#max = max;
  }
  add(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    const room = this.#max - this.#bytes;
    if (bytes.length > room) this.truncated = true;
    const kept = bytes.subarray(0, Math.max(room, 0));
    this.#parts.push(kept);
    this.#bytes += kept.length;
  }
  text(): string {
    // A cut through a multi-byte character drops the partial one (TextDecoder's replacement is not wanted).
    return new TextDecoder('utf-8', { fatal: false })
      .decode(Buffer.concat(this.#parts))
      .replace(/\uFFFD$/, '');
  }
}

async function untilSettled(
  sandboxes: SandboxService,
  principal: OrgPrincipal,
  sandbox: SandboxView,
): Promise<SandboxView> {
  const deadline = Date.now() + createWaitSeconds * 1000;
  let current = sandbox;
  for (
    let pause = 200;
    settling.has(current.status) && !isTerminal(current.status) && Date.now() < deadline;
    pause = Math.min(pause * 2, 2000)
  ) {
    await new Promise((resolve) => setTimeout(resolve, pause));
    current = await sandboxes.get(principal, sandbox.id);
  }
  return current;
}
