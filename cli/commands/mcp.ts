import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from '../context.ts';

export const mcp: Command = {
  usage: `Usage: differently mcp
Serves the control plane's MCP tools over stdio, for a local agent: each message goes to the endpoint's
MCP server (POST /v1/mcp) with the key, and each answer and progress notification comes back on stdout.
Configure an agent with the command \`differently mcp\` and DIFFERENTLY_ENDPOINT and DIFFERENTLY_API_KEY.`,
  argumentFirst: true,
  actions: {
    '': async (ctx) => {
      const { endpoint, key } = ctx.target;
      // Both ends are the MCP SDK's own transports; this command only passes messages between them.
      const remote = new StreamableHTTPClientTransport(new URL('/v1/mcp', endpoint), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      });
      const local = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => {
        local.onclose = resolve;
        process.stdin.once('end', resolve);
      });
      local.onmessage = (message) => {
        remote.send(message).catch((error: unknown) => {
          ctx.io.stderr.write(`differently mcp: ${error instanceof Error ? error.message : String(error)}\n`);
          // A request that could not be delivered is answered, so the agent does not wait forever.
          if ('id' in message && 'method' in message) {
            void local.send({
              jsonrpc: '2.0',
              id: message.id,
              error: { code: -32603, message: `the Differently endpoint did not answer: ${String(error)}` },
            });
          }
        });
      };
      remote.onmessage = (message) => {
        void local.send(message);
      };
      remote.onerror = (error) => ctx.io.stderr.write(`differently mcp: ${error.message}\n`);
      await remote.start();
      await local.start();
      await closed;
      await remote.close();
      return 0;
    },
  },
};
