import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { errors } from '../../../lib/errors.ts';
import { type RouteContext, type RouteDefinition, route } from '../../../lib/http/types.ts';
import { newId } from '../../../lib/ids.ts';
import { silentLog } from '../../../lib/log.ts';
import { createMcpServer } from '../../../lib/mcp/tools.ts';
import { sandboxView } from '../../../lib/sandboxes/transition.ts';
import type { SandboxView } from '../../../lib/schemas/sandboxes.ts';
import * as z from '../../../lib/zod.ts';
import { orgPrincipal, sandboxRecord } from '../../helpers/records.ts';

const principal = orgPrincipal(newId('org'));

type Seen = Pick<RouteContext<unknown, unknown, unknown>, 'params' | 'query' | 'body'> & {
  path: string;
  raw: Buffer | undefined;
};

/**
 * Routes no MCP code knows of: each declares a tool, and records what its handler was called with. The
 * tools the server lists and how it calls them must come from these declarations alone.
 */
function widgetRoutes(seen: Seen[]): RouteDefinition[] {
  const record = (context: RouteContext<unknown, unknown, unknown>) =>
    seen.push({
      params: context.params,
      query: context.query,
      body: context.body,
      path: context.request.path,
      raw: context.request.body,
    });
  return [
    route({
      method: 'POST',
      path: '/v1/widgets/{id}/paint',
      summary: 'Paint a widget',
      auth: 'org',
      params: z.strictObject({ id: z.string().check(z.regex(/^w_\d+$/)) }),
      query: z.strictObject({ dryRun: z.optional(z.enum(['0', '1'])) }),
      body: z
        .strictObject({ colour: z.string(), coats: z._default(z.int().check(z.gte(1)), 1) })
        .check(z.refine((body) => body.colour !== 'invisible', { message: 'no invisible paint' })),
      responses: { 200: z.object({ painted: z.string() }) },
      tool: { name: 'paint_widget', description: 'Paint it.' },
      handle: async (context) => {
        record(context);
        return { status: 200, body: { painted: context.body.colour } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/widgets/{id}/label',
      summary: 'A widget label, as bytes',
      auth: 'org',
      params: z.strictObject({ id: z.string() }),
      query: z.strictObject({ side: z.string() }),
      responses: { 200: null },
      tool: { name: 'read_label', description: 'Read it.' },
      handle: async (context) => {
        record(context);
        return {
          status: 200,
          raw: context.params.id === 'w_1' ? Buffer.from('hé\n') : Buffer.from([0xff, 0]),
        };
      },
    }),
    route({
      method: 'PUT',
      path: '/v1/widgets/{id}/label',
      summary: 'Write a widget label',
      auth: 'org',
      params: z.strictObject({ id: z.string() }),
      query: z.strictObject({ side: z.string() }),
      rawBody: { maxBytes: 1024 },
      responses: { 204: null },
      tool: { name: 'write_label', description: 'Write it.' },
      handle: async (context) => {
        record(context);
        return { status: 204 };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/widgets/{id}/run',
      summary: 'Run a widget; ?stream=1 streams its lines',
      auth: 'org',
      params: z.strictObject({ id: z.string() }),
      query: z.strictObject({ stream: z.optional(z.enum(['0', '1'])) }),
      body: z.strictObject({ command: z.string() }),
      responses: { 200: z.object({ exitCode: z.int() }) },
      streamResponse: { mediaType: 'application/x-ndjson', description: 'lines' },
      tool: { name: 'run_widget', description: 'Run it.', text: (body) => `ran: ${JSON.stringify(body)}` },
      handle: async (context) => {
        record(context);
        if (context.query.stream !== '1') {
          return {
            status: 200,
            body: {
              exitCode: 0,
              stdout: 'a\nb\n',
              stderr: '',
              durationMs: 1,
              truncated: false,
              timedOut: false,
            },
          };
        }
        return {
          status: 200,
          // Cut inside a line and inside a character, with a keep-alive: the reader must put it together.
          stream: async (write) => {
            await write('{"stream":"stdout","da');
            await write('ta":"a\\n"}\n\n{"stream":"stderr","data":"caf');
            await write(Buffer.from('é"}\n{"exitCode":4}\n'));
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/widgets/secret',
      summary: 'Not a tool',
      auth: 'org',
      responses: { 200: z.object({}) },
      handle: async () => ({ status: 200, body: {} }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/widgets/{id}',
      summary: 'Refuses',
      auth: 'org',
      params: z.strictObject({ id: z.string() }),
      responses: { 404: z.object({}) },
      tool: { name: 'delete_widget', description: 'Delete it.' },
      handle: async (context) => {
        throw errors.notFound('widget', context.params.id);
      },
    }),
  ];
}

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function connect(routes: RouteDefinition[], sandboxes = { get: async () => sandbox('running') }) {
  const server = createMcpServer({
    routes,
    sandboxes,
    principal,
    log: silentLog,
    requestId: 'req-1',
    execOutputMaxBytes: 1024,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

const resultSchema = z.custom<CallToolResult>(
  (value) => typeof value === 'object' && value !== null && 'content' in value,
);
async function call(client: Client, name: string, args: Record<string, unknown>, progressToken?: number) {
  return resultSchema.parse(
    await client.callTool(
      { name, arguments: args, ...(progressToken !== undefined && { _meta: { progressToken } }) },
      undefined,
      progressToken !== undefined ? { onprogress: () => {} } : undefined,
    ),
  );
}
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

describe('MCP tools built from the route table', () => {
  it('lists exactly the routes that declare a tool, each with its route-part inputs', async () => {
    const client = await connect(widgetRoutes([]));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'paint_widget',
      'read_label',
      'write_label',
      'run_widget',
      'delete_widget',
    ]);
    const inputs = Object.fromEntries(
      tools.map((tool) => [tool.name, Object.keys(tool.inputSchema.properties ?? {}).sort()]),
    );
    expect(inputs).toEqual({
      paint_widget: ['coats', 'colour', 'dryRun', 'id'],
      read_label: ['id', 'side'],
      write_label: ['content', 'contentBase64', 'id', 'side'],
      // A streamed route's query only selects streaming: not an input.
      run_widget: ['command', 'id'],
      delete_widget: ['id'],
    });
    expect(tools.find((tool) => tool.name === 'paint_widget')?.description).toBe('Paint it.');
  });

  it("calls the route's handler with its parameters, query and body split out, and answers its body", async () => {
    const seen: Seen[] = [];
    const client = await connect(widgetRoutes(seen));
    const painted = await call(client, 'paint_widget', { id: 'w_7', colour: 'red', dryRun: '1' });
    expect(painted.isError).toBeFalsy();
    expect(painted.structuredContent).toEqual({ painted: 'red' });
    expect(seen).toEqual([
      {
        params: { id: 'w_7' },
        query: { dryRun: '1' },
        body: { colour: 'red', coats: 1 },
        path: '/v1/widgets/w_7/paint',
        raw: undefined,
      },
    ]);
  });

  it("validates with the route's schemas, refinements included, before the handler runs", async () => {
    const seen: Seen[] = [];
    const client = await connect(widgetRoutes(seen));
    expect((await call(client, 'paint_widget', { id: 'nope', colour: 'red' })).isError).toBe(true);
    expect((await call(client, 'paint_widget', { id: 'w_1', colour: 'invisible' })).isError).toBe(true);
    expect((await call(client, 'paint_widget', { id: 'w_1', colour: 'red', extra: 1 })).isError).toBe(true);
    expect(seen).toEqual([]);
  });

  it('gives raw answers as text, or base64 when they are not UTF-8', async () => {
    const client = await connect(widgetRoutes([]));
    const text = await call(client, 'read_label', { id: 'w_1', side: 'front' });
    expect(textOf(text)).toBe('hé\n');
    expect(text.structuredContent).toEqual({ side: 'front', encoding: 'utf8', size: 4 });
    const bytes = await call(client, 'read_label', { id: 'w_2', side: 'back' });
    expect(textOf(bytes)).toBe(Buffer.from([0xff, 0]).toString('base64'));
    expect(bytes.structuredContent).toEqual({ side: 'back', encoding: 'base64', size: 2 });
  });

  it('takes a raw body as content or contentBase64, exactly one', async () => {
    const seen: Seen[] = [];
    const client = await connect(widgetRoutes(seen));
    const written = await call(client, 'write_label', { id: 'w_1', side: 'top', content: 'héllo' });
    expect(written.structuredContent).toEqual({ side: 'top', size: 6 });
    await call(client, 'write_label', { id: 'w_1', side: 'top', contentBase64: 'AP8=' });
    expect(seen.map((call) => call.raw)).toEqual([Buffer.from('héllo'), Buffer.from([0, 0xff])]);
    const both = await call(client, 'write_label', {
      id: 'w_1',
      side: 'top',
      content: 'a',
      contentBase64: 'AA==',
    });
    expect(both.isError).toBe(true);
    expect((await call(client, 'write_label', { id: 'w_1', side: 'top' })).isError).toBe(true);
    expect(seen).toHaveLength(2);
  });

  it("streams a streamed route when the client sends a progress token, and uses the tool's text", async () => {
    const seen: Seen[] = [];
    const client = await connect(widgetRoutes(seen));
    const waited = await call(client, 'run_widget', { id: 'w_1', command: 'x' });
    expect(seen[0]?.query).toEqual({});
    expect(textOf(waited)).toBe(`ran: ${JSON.stringify(waited.structuredContent)}`);
    const progress: string[] = [];
    client.setNotificationHandler(
      (await import('@modelcontextprotocol/sdk/types.js')).ProgressNotificationSchema,
      (notification) => {
        progress.push(notification.params.message ?? '');
      },
    );
    const streamed = await call(client, 'run_widget', { id: 'w_1', command: 'x' }, 9);
    expect(seen[1]?.query).toEqual({ stream: '1' });
    expect(streamed.structuredContent).toMatchObject({ exitCode: 4, stdout: 'a\n', stderr: 'café' });
    expect(progress).toEqual(['stdout: a\n', 'stderr: café']);
  });

  it("answers the route's errors as tool errors with the API's code", async () => {
    const client = await connect(widgetRoutes([]));
    const refused = await call(client, 'delete_widget', { id: 'w_3' });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ error: { code: 'not_found' } });
  });
});

const queued = sandboxRecord(principal.orgId);
const sandbox = (status: SandboxView['status']): SandboxView => sandboxView({ ...queued, status });

describe('a waiting tool', () => {
  const created = route({
    method: 'POST',
    path: '/v1/sandboxes',
    summary: 'Create',
    auth: 'org',
    body: z.strictObject({ template: z.optional(z.string()) }),
    responses: { 202: z.object({}) },
    tool: { name: 'create_sandbox', description: 'Create.', waits: true },
    handle: async () => ({ status: 202, body: sandbox('queued') }),
  });

  it('answers the sandbox once settled, read again until it leaves queued and provisioning', async () => {
    const statuses: SandboxView['status'][] = ['queued', 'provisioning', 'running'];
    let reads = 0;
    const client = await connect([created], {
      get: async () => sandbox(statuses[Math.min(reads++, statuses.length - 1)] ?? 'running'),
    });
    const result = await call(client, 'create_sandbox', {});
    expect(result.structuredContent).toMatchObject({ status: 'running' });
    expect(reads).toBe(3);
  });

  it('answers at once with wait: false', async () => {
    let reads = 0;
    const client = await connect([created], {
      get: async () => {
        reads += 1;
        return sandbox('running');
      },
    });
    const result = await call(client, 'create_sandbox', { wait: false });
    expect(result.structuredContent).toMatchObject({ status: 'queued' });
    expect(reads).toBe(0);
  });
});
