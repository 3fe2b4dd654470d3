import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { snapshotSchema } from '../../lib/schemas/sandbox-operations.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * The MCP endpoint driven by the MCP SDK's own client over streamable HTTP, against the local runtime
 * (the endpoint runs on the streaming function there, as on AWS).
 */
let e2e: E2e;

beforeAll(async () => {
  e2e = await startE2e();
});
afterAll(async () => {
  await e2e.stop();
});

/** Every message a client's transport delivered, in order (see the stdio test for why). */
const deliveredTo = new WeakMap<Client, unknown[]>();

/**
 * Keeps every message a connected transport delivers, in order. The SDK client hands a progress
 * notification to its callback a microtask later, so one that reaches it in the same read as the result
 * is dropped (the result has removed the callback by then): tests check what was sent here instead.
 */
function recordDeliveries(transport: {
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
}): unknown[] {
  const received: unknown[] = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message) => {
    received.push(message);
    deliver?.(message);
  };
  return received;
}

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', e2e.runtime.url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  deliveredTo.set(client, recordDeliveries(transport));
  return client;
}

const viewSchema = z.object({ id: z.string(), status: z.string(), projectId: z.string().nullable() });
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return z
    .custom<CallToolResult>((value) => typeof value === 'object' && value !== null && 'content' in value)
    .parse(await client.callTool({ name, arguments: args }));
}

describe('the MCP server over streamable HTTP', () => {
  it('lists its tools, with input schemas from the API', async () => {
    const client = await connect(e2e.key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'create_sandbox',
        'delete_sandbox',
        'exec',
        'expose_port',
        'fork_sandbox',
        'get_sandbox',
        'list_files',
        'list_processes',
        'list_sandboxes',
        'pause_sandbox',
        'read_file',
        'read_process_output',
        'resume_sandbox',
        'signal_process',
        'snapshot_sandbox',
        'start_process',
        'start_sandbox',
        'stop_sandbox',
        'write_file',
        'write_to_process',
      ].sort(),
    );
    const exec = tools.find((tool) => tool.name === 'exec');
    expect(exec?.inputSchema.properties).toHaveProperty('command');
    expect(exec?.inputSchema.properties).toHaveProperty('timeoutSeconds');
    expect(exec?.inputSchema.required).toContain('id');
    await client.close();
  });

  it('runs a sandbox end to end: create, exec, files, delete', async () => {
    const client = await connect(e2e.key);
    const created = await call(client, 'create_sandbox', { placement: { allowedPools: ['local'] } });
    expect(created.isError).toBeFalsy();
    const sandbox = viewSchema.parse(created.structuredContent);
    expect(sandbox.status).toBe('running');

    const ran = await call(client, 'exec', { id: sandbox.id, command: 'echo hello; echo oops >&2; exit 3' });
    expect(ran.structuredContent).toMatchObject({ exitCode: 3, stdout: 'hello\n', stderr: 'oops\n' });
    expect(textOf(ran)).toContain('exit code: 3');

    await call(client, 'write_file', { id: sandbox.id, path: '/work/notes.txt', content: 'café\n' });
    const read = await call(client, 'read_file', { id: sandbox.id, path: '/work/notes.txt' });
    expect(textOf(read)).toBe('café\n');
    const listed = await call(client, 'list_files', { id: sandbox.id, path: '/work' });
    expect(JSON.stringify(listed.structuredContent)).toContain('notes.txt');

    const gone = await call(client, 'delete_sandbox', { id: sandbox.id });
    expect(viewSchema.parse(gone.structuredContent).status).toBe('terminating');
    await client.close();
  });

  it('answers a snapshot as REST shows it: no backend ref, updatedAt set', async () => {
    const client = await connect(e2e.key);
    const sandbox = viewSchema.parse(
      (await call(client, 'create_sandbox', { placement: { allowedPools: ['local'] } })).structuredContent,
    );
    const taken = await call(client, 'snapshot_sandbox', { id: sandbox.id });
    expect(taken.isError).toBeFalsy();
    const snapshot = z.strictObject(snapshotSchema.shape).parse(taken.structuredContent);
    const rest = await fetch(new URL(`/v1/snapshots/${snapshot.id}`, e2e.runtime.url), {
      headers: { authorization: `Bearer ${e2e.key}` },
    });
    expect(Object.keys(z.strictObject(snapshotSchema.shape).parse(await rest.json())).sort()).toEqual(
      Object.keys(snapshot).sort(),
    );
    await call(client, 'delete_sandbox', { id: sandbox.id });
    await client.close();
  });

  it('streams a long command’s output as progress notifications', async () => {
    const client = await connect(e2e.key);
    const sandbox = viewSchema.parse(
      (await call(client, 'create_sandbox', { placement: { allowedPools: ['local'] } })).structuredContent,
    );
    const result = await client.callTool(
      {
        name: 'exec',
        arguments: { id: sandbox.id, command: 'for i in 1 2 3; do echo line $i; sleep 0.2; done' },
      },
      undefined,
      { onprogress: () => {} },
    );
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: 'line 1\nline 2\nline 3\n' });
    // The notifications as the server sent them, before the result (the SDK's callback may miss the last
    // one when it arrives in the same read as the result).
    const progress = (deliveredTo.get(client) ?? [])
      .map((m) => JSON.stringify(m))
      .filter((m) => m.includes('notifications/progress'));
    expect(progress.join('')).toContain('stdout: line 1');
    expect(progress.join('')).toContain('stdout: line 3');
    await call(client, 'delete_sandbox', { id: sandbox.id });
    await client.close();
  });

  it("answers errors as tool errors with the API's code and message", async () => {
    const client = await connect(e2e.key);
    const missing = await call(client, 'get_sandbox', { id: 'sbx_01J00000000000000000000000' });
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toMatchObject({ error: { code: 'not_found' } });
    expect(textOf(missing)).toBe('not_found: sandbox sbx_01J00000000000000000000000 not found');
    await client.close();
  });

  it('refuses a caller without a valid key', async () => {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    await expect(
      client.connect(
        new StreamableHTTPClientTransport(new URL('/v1/mcp', e2e.runtime.url), {
          requestInit: { headers: { authorization: 'Bearer key_01J00000000000000000000000.nope' } },
        }),
      ),
    ).rejects.toThrow();
  });

  it("shows a project-restricted key only its project's sandboxes, as REST does", async () => {
    const org = z
      .object({ id: z.string() })
      .parse((await e2e.api.post('/v1/admin/orgs', e2e.runtime.adminKey, { name: 'p' })).body);
    const project = z
      .object({ id: z.string() })
      .parse(
        (await e2e.api.post(`/v1/admin/orgs/${org.id}/projects`, e2e.runtime.adminKey, { name: 'a' })).body,
      );
    const keyOf = async (body: Record<string, unknown>) =>
      z
        .object({ key: z.string() })
        .parse((await e2e.api.post(`/v1/admin/orgs/${org.id}/keys`, e2e.runtime.adminKey, body)).body).key;
    const orgKey = await keyOf({ name: 'org' });
    const projectKey = await keyOf({ name: 'project', projectId: project.id });
    const asOrg = await connect(orgKey);
    const outside = viewSchema.parse(
      (await call(asOrg, 'create_sandbox', { wait: false })).structuredContent,
    );
    const asProject = await connect(projectKey);
    const inside = viewSchema.parse(
      (await call(asProject, 'create_sandbox', { wait: false })).structuredContent,
    );
    expect(inside.projectId).toBe(project.id);
    const listed = await call(asProject, 'list_sandboxes', {});
    const ids = JSON.stringify(listed.structuredContent);
    expect(ids).toContain(inside.id);
    expect(ids).not.toContain(outside.id);
    const hidden = await call(asProject, 'get_sandbox', { id: outside.id });
    expect(hidden.structuredContent).toMatchObject({ error: { code: 'not_found' } });
    await asOrg.close();
    await asProject.close();
  });
});

describe('the MCP server over stdio (differently mcp)', () => {
  it('serves the same tools to a local agent, progress included, through the endpoint', async () => {
    const client = new Client({ name: 'mcp-stdio-e2e', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(import.meta.dirname, '..', '..', 'cli', 'bin.ts'), 'mcp'],
      env: {
        DIFFERENTLY_ENDPOINT: e2e.runtime.url,
        DIFFERENTLY_API_KEY: e2e.key,
        PATH: process.env.PATH ?? '',
      },
      stderr: 'pipe',
    });
    await client.connect(transport);
    const received = recordDeliveries(transport);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('exec');
    const sandbox = viewSchema.parse(
      (await call(client, 'create_sandbox', { placement: { allowedPools: ['local'] } })).structuredContent,
    );
    const result = await client.callTool(
      { name: 'exec', arguments: { id: sandbox.id, command: 'echo over stdio' } },
      undefined,
      { onprogress: () => {} },
    );
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: 'over stdio\n' });
    const progressAt = received.findIndex(
      (m) =>
        JSON.stringify(m).includes('notifications/progress') &&
        JSON.stringify(m).includes('stdout: over stdio'),
    );
    const resultAt = received.findIndex((m) => JSON.stringify(m).includes('"exitCode":0'));
    expect(progressAt).toBeGreaterThanOrEqual(0);
    expect(progressAt).toBeLessThan(resultAt);
    const missing = await call(client, 'get_sandbox', { id: 'sbx_01J00000000000000000000000' });
    expect(missing.structuredContent).toMatchObject({ error: { code: 'not_found' } });
    await call(client, 'delete_sandbox', { id: sandbox.id });
    await client.close();
  });
});
