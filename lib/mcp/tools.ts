import { McpServer, type ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { ApiError, isErrorCode, toErrorResponse } from '../errors.ts';
import type { HttpRequest, RouteDefinition, RouteResult, RouteTool } from '../http/types.ts';
import { describeError, type Log } from '../log.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import { untilSettled } from '../sandboxes/until-settled.ts';
import { ExecStreamLineReader } from '../schemas/exec-stream-lines.ts';
import type { ExecResult } from '../schemas/sandboxes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import * as z from '../zod.ts';
import type { UnreadBound } from './unread-bound.ts';

/** What the tools act through: the REST routes that declare a tool, called as the same caller. */
export interface McpToolDeps {
  /** The route table; the routes with a `tool` are the tools, in its order. */
  routes: readonly RouteDefinition[];
  /** What a waiting tool (create_sandbox) reads its sandbox through until it settles. */
  sandboxes: Pick<SandboxService, 'get'>;
  principal: OrgPrincipal;
  log: Log;
  /** The MCP request's id: the routes' calls carry it as theirs. */
  requestId: string;
  /** How many bytes of each of stdout and stderr an exec returns (the API's own bound). */
  execOutputMaxBytes: number;
  /** The HTTP request's end: a client that goes away cancels its running command, as over REST. */
  gone?: AbortSignal | undefined;
  /** What the answer's client has not read yet: a streamed exec waits while it is over its bound. */
  unread?: UnreadBound | undefined;
}

export const mcpServerInfo = { name: 'differently', version: '0.1.0' };

/** How long a waiting tool waits for its sandbox to settle: well inside the streamed function's limit. */
const settleWaitSeconds = 120;

/** A tool's input and how it splits into the route's parts. */
interface ToolInput {
  schema: z.ZodMiniObject;
  paramKeys: readonly string[];
  queryKeys: readonly string[];
  bodyKeys: readonly string[];
}

/** The fields of a raw-body route's tool: the bytes as text or base64, exactly one of them. */
const rawBodyShape = {
  content: z.optional(z.string()).check(z.describe('The content as UTF-8 text')),
  contentBase64: z.optional(z.base64()).check(z.describe('The content as base64 (for bytes)')),
};
/** What a waiting tool needs of its route's answer: the sandbox's id. */
const answeredSandbox = z.object({ id: z.string() });
const waitShape = {
  wait: z
    ._default(z.boolean(), true)
    .check(z.describe('Wait until the sandbox has settled (running or failed)')),
};

/**
 * The tool's input schema: the route's body (its refinements kept), extended with the path parameters
 * and the query (a streamed route's query only selects streaming and is left out), a raw body's
 * content fields, and `wait` for a waiting tool.
 */
function toolInput(route: RouteDefinition, tool: RouteTool): ToolInput {
  const shapeOf = (schema: z.ZodMiniType | undefined): z.core.$ZodShape =>
    schema instanceof z.ZodMiniObject ? schema.shape : {};
  const params = shapeOf(route.params);
  const query = route.streamResponse === undefined ? shapeOf(route.query) : {};
  const body = shapeOf(route.body);
  if (route.body !== undefined && !(route.body instanceof z.ZodMiniObject)) {
    throw new Error(`${route.method} ${route.path}: a tool's route takes an object body`);
  }
  const base = route.body instanceof z.ZodMiniObject ? route.body : z.strictObject({});
  let schema: z.ZodMiniObject = z.safeExtend(base, {
    ...params,
    ...query,
    ...(route.rawBody !== undefined && rawBodyShape),
    ...(tool.waits === true && waitShape),
  });
  if (route.rawBody !== undefined) {
    schema = schema.check(
      z.refine(
        (input: Record<string, unknown>) =>
          (input.content === undefined) !== (input.contentBase64 === undefined),
        { message: 'send exactly one of content or contentBase64', path: ['content'] },
      ),
    );
  }
  return {
    schema,
    paramKeys: Object.keys(params),
    queryKeys: Object.keys(query),
    bodyKeys: Object.keys(body),
  };
}

/**
 * The MCP server of one request: every route that declares a tool is one, run as the caller (an org key,
 * maybe restricted to a project) through the route's own handler, with its validation and its errors.
 */
export function createMcpServer(deps: McpToolDeps): McpServer {
  const server = new McpServer(mcpServerInfo, {
    instructions:
      'Differently runs sandboxes: create one (it waits until running), run commands in it with exec, move files with read_file, write_file and list_files, and delete it when done.',
  });
  for (const route of deps.routes) {
    const tool = route.tool;
    if (tool === undefined) continue;
    const input = toolInput(route, tool);
    const handle = async (values: Record<string, unknown>, extra: ToolExtra): Promise<CallToolResult> => {
      try {
        return await callRoute(deps, route, tool, input, values, extra);
      } catch (error) {
        return errorResult(error, deps.log, tool.name);
      }
    };
    // The SDK types a callback by a conditional on its schema, which TypeScript cannot resolve for a
    // schema built at run time; the schema given is the one the SDK parses the input with.
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: input.schema },
      handle as unknown as ToolCallback<z.ZodMiniObject>,
    );
  }
  return server;
}

/** What a tool callback gets beside its input: the request's signal, its progress token, notifications. */
type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

async function callRoute(
  deps: McpToolDeps,
  route: RouteDefinition,
  tool: RouteTool,
  input: ToolInput,
  values: Record<string, unknown>,
  extra: ToolExtra,
): Promise<CallToolResult> {
  const pick = (keys: readonly string[]) =>
    Object.fromEntries(keys.filter((key) => values[key] !== undefined).map((key) => [key, values[key]]));
  const params = pick(input.paramKeys);
  const progressToken = extra._meta?.progressToken;
  const streams = route.streamResponse !== undefined && progressToken !== undefined;
  const query = route.streamResponse === undefined ? pick(input.queryKeys) : streams ? { stream: '1' } : {};
  const raw =
    route.rawBody === undefined
      ? undefined
      : typeof values.contentBase64 === 'string'
        ? Buffer.from(values.contentBase64, 'base64')
        : Buffer.from(typeof values.content === 'string' ? values.content : '', 'utf8');
  const signal = deps.gone === undefined ? extra.signal : AbortSignal.any([extra.signal, deps.gone]);
  const request: HttpRequest = {
    method: route.method,
    path: route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name]))),
    query: {},
    headers: {},
    body: raw,
    requestId: deps.requestId,
    signal,
  };
  const result = await route.handle({
    request,
    principal: deps.principal,
    params,
    query,
    body: route.body === undefined ? undefined : pick(input.bodyKeys),
  });
  if (result.stream !== undefined && streams) {
    return answer(tool, await relayExecStream(deps, result, progressToken, extra, signal));
  }
  if (result.raw !== undefined) return fileContentResult(result.raw, pick(input.queryKeys));
  if (raw !== undefined) return jsonResult({ ...pick(input.queryKeys), size: raw.length });
  if (tool.waits === true && values.wait !== false) {
    const { id } = answeredSandbox.parse(result.body);
    return answer(tool, await untilSettled(deps.sandboxes, deps.principal, id, settleWaitSeconds * 1000));
  }
  return answer(tool, result.body);
}

/** The route's answer as a tool result: its JSON as structured content, as text the tool's or the JSON. */
function answer(tool: RouteTool, body: unknown): CallToolResult {
  const result = jsonResult(body);
  return tool.text === undefined ? result : { ...result, content: [{ type: 'text', text: tool.text(body) }] };
}

function jsonResult(value: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent:
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : { value },
  };
}

/** A file's bytes: as text when they are UTF-8, else base64, said in the structured content. */
function fileContentResult(content: Buffer, query: Record<string, unknown>): CallToolResult {
  const text = content.toString('utf8');
  const utf8 = Buffer.from(text, 'utf8').equals(content);
  return {
    content: [{ type: 'text', text: utf8 ? text : content.toString('base64') }],
    structuredContent: { ...query, encoding: utf8 ? 'utf8' : 'base64', size: content.length },
  };
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

/**
 * A streamed exec's NDJSON lines relayed as they come: each output chunk goes to the client as a progress
 * notification as it is produced; the result holds the output up to the bound, as the buffered exec does.
 */
async function relayExecStream(
  deps: McpToolDeps,
  result: RouteResult,
  progressToken: string | number,
  extra: ToolExtra,
  cancelled: AbortSignal,
): Promise<ExecResult> {
  const started = Date.now();
  const output = {
    stdout: new BoundedText(deps.execOutputMaxBytes),
    stderr: new BoundedText(deps.execOutputMaxBytes),
  };
  let exitCode: number | undefined;
  let failure: { code: string; message: string } | undefined;
  let progress = 0;
  const reader = new ExecStreamLineReader();
  await result.stream?.(async (chunk) => {
    for (const line of reader.push(chunk)) {
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
    }
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
