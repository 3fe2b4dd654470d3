import { errors } from '../errors.ts';
import { errorSchema } from '../http/route-params.ts';
import type { RouteDeps } from '../http/routes/deps.ts';
import { type RouteDefinition, route } from '../http/types.ts';
import * as z from '../zod.ts';
import { maxUnreadMcpBytes, UnreadBound } from './unread-bound.ts';

/** JSON-RPC messages of one MCP request: a file written through write_file travels base64 inside one. */
const maxMcpRequestBytes = 8 * 1024 * 1024;

/**
 * The MCP endpoint (streamable HTTP, stateless): each POST carries JSON-RPC messages, authenticated like
 * every route with the caller's key, and is answered by a server built for that request, acting as that
 * caller. Answers are an SSE stream (tool progress, then the result) or JSON. It runs on the
 * response-streaming function, as the exec route does, so a long command may take minutes. Its tools are
 * the routes of `table` that declare one.
 */
export function mcpRoutes(deps: RouteDeps, table: readonly RouteDefinition[]): RouteDefinition[] {
  return [
    route({
      method: 'POST',
      path: '/v1/mcp',
      summary:
        'The MCP server (streamable HTTP, stateless): tools to create sandboxes, run commands and move files, as the key',
      auth: 'org',
      rawBody: { maxBytes: maxMcpRequestBytes, mediaType: 'application/json' },
      rawResponse: {
        mediaTypes: ['text/event-stream', 'application/json'],
        description: 'JSON-RPC answers: an SSE stream, or JSON',
      },
      responses: { 200: null, 202: null, 400: errorSchema, 401: errorSchema },
      streamed: true,
      handle: async ({ principal, request }) => {
        const unread = new UnreadBound(maxUnreadMcpBytes);
        const { createMcpServer, WebStandardStreamableHTTPServerTransport } = await mcpServerModules();
        const server = createMcpServer({
          routes: table,
          sandboxes: deps.sandboxes,
          principal,
          log: deps.log,
          requestId: request.requestId,
          execOutputMaxBytes: deps.config.api.execOutputMaxBytes,
          gone: request.signal,
          unread,
        });
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await server.connect(transport);
        const headers = new Headers();
        for (const [name, value] of Object.entries(request.headers)) headers.set(name, value);
        const answer = await transport.handleRequest(
          new Request('http://differently.invalid/v1/mcp', {
            method: 'POST',
            headers,
            body: request.body ?? Buffer.alloc(0),
          }),
        );
        if (answer.status >= 400) {
          // The transport refused the request itself (not JSON-RPC, not accepting SSE, a wrong content
          // type): answered in the API's one envelope, with the transport's reason.
          await server.close();
          throw errors.invalidRequest(`not an MCP request this endpoint takes: ${await reasonOf(answer)}`);
        }
        const answerHeaders: Record<string, string> = {};
        answer.headers.forEach((value, name) => {
          answerHeaders[name] = value;
        });
        const body = answer.body;
        return {
          status: answer.status,
          headers: answerHeaders,
          stream: async (write) => {
            try {
              if (body === null) return;
              const decoder = new TextDecoder();
              for await (const chunk of body) {
                const text = decoder.decode(chunk, { stream: true });
                if (text === '') continue;
                await write(text);
                unread.taken(Buffer.byteLength(text));
              }
            } finally {
              await server.close();
            }
          },
        };
      },
    }),
  ];
}

/**
 * The MCP server and its SDK (with the SDK's JSON-schema validator), loaded by the first MCP request:
 * the API's cold start does not evaluate them for the routes that never use them. The bundle still holds
 * them (esbuild inlines the import and defers its evaluation to here).
 */
async function mcpServerModules() {
  const [tools, transport] = await Promise.all([
    import('./tools.ts'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  ]);
  return {
    createMcpServer: tools.createMcpServer,
    WebStandardStreamableHTTPServerTransport: transport.WebStandardStreamableHTTPServerTransport,
  };
}

const jsonRpcError = z.object({ error: z.object({ message: z.string() }) });

/** The JSON-RPC error's message of a refused request, or its status. */
async function reasonOf(answer: Response): Promise<string> {
  const text = await answer.text();
  try {
    const parsed = jsonRpcError.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data.error.message;
  } catch {
    // not JSON: the status says it
  }
  return `HTTP ${answer.status}`;
}
