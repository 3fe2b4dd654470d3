import { describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { silentLog } from '../../../lib/log.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { documentClient, localDynamoDbClient } from '../../../lib/store/dynamodb/client.ts';
import { dynamoDbStore } from '../../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../../lib/store/dynamodb/table.ts';
import { RecordingQueue } from '../../helpers/plane.ts';

/**
 * What each request costs the store, on DynamoDB Local, in containers that share only the table (each
 * with its own client, pool registry and authenticator, as on Lambda). Linking of audit records is left
 * to explicit calls here, so the counts are the request path's own.
 */
const endpoint = inject('dynamodbEndpoint');
const tableName = `round-trips-${process.pid}`;
const backend = new FakeAdapter();
const config = parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] });
const idSchema = z.object({ id: z.string() });

async function container(table = tableName, planeConfig = config) {
  const client = localDynamoDbClient(endpoint);
  const sent: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  await ensureTable(client, table);
  const store = dynamoDbStore({ client: documentClient(client), tableName: table, linkInline: false });
  const queue = new RecordingQueue();
  const plane = createControlPlane({
    config: planeConfig,
    store,
    queue,
    pools: await buildPools(planeConfig, { log: silentLog, store, adapters: { fake: backend } }),
    log: silentLog,
    adminKey: 'round-trips-admin-key',
  });
  /** The store commands `work` sent from this container. */
  const commands = async (work: () => Promise<unknown>) => {
    sent.length = 0;
    await work();
    return [...sent];
  };
  return { plane, store, queue, commands };
}

type Container = Awaited<ReturnType<typeof container>>;

function call(c: Container, key: string, method: string, path: string, body?: unknown) {
  return c.plane.handleHttp({
    method,
    path,
    query: {},
    headers: { authorization: `Bearer ${key}` },
    body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
    requestId: 'round-trips',
  });
}

describe('store round trips per request, across containers', () => {
  it('execs in one request, creates in two, and a revocation elsewhere takes effect at once', async () => {
    const [api, other] = [await container(), await container()];
    const org = await api.plane.tenancy.createOrg({ name: 'round-trips' });
    const { key } = await api.plane.tenancy.createKey(org.id, { name: 'k', role: 'member' });
    const first = await call(api, key, 'POST', '/v1/sandboxes', {});
    expect(first.status).toBe(202);
    // This container now knows the key's org and the pools' version: a create is a read and a write.
    let id = '';
    const create = await api.commands(async () => {
      const response = await call(api, key, 'POST', '/v1/sandboxes', {});
      expect(response.status).toBe(202);
      id = idSchema.parse(JSON.parse(String(response.body))).id;
    });
    expect(create).toEqual(['BatchGetItemCommand', 'TransactWriteItemsCommand']);

    await provisionSandbox(other.plane, { sandboxId: id, orgId: org.id });
    const exec = await api.commands(async () => {
      const response = await call(api, key, 'POST', `/v1/sandboxes/${id}/exec`, { command: 'echo hi' });
      expect(response.status).toBe(200);
    });
    expect(exec).toEqual(['BatchGetItemCommand']);

    // Another container revokes the key: the very next exec here is refused, org remembered or not.
    const keyId = key.slice(0, key.indexOf('.'));
    await other.plane.tenancy.revokeKey(keyId);
    const refused = await call(api, key, 'POST', `/v1/sandboxes/${id}/exec`, { command: 'echo hi' });
    expect(refused.status).toBe(401);
  });

  it("reads another org's sandbox id as absent, never as the caller's", async () => {
    const api = await container();
    const a = await api.plane.tenancy.createOrg({ name: 'a' });
    const b = await api.plane.tenancy.createOrg({ name: 'b' });
    const keyA = (await api.plane.tenancy.createKey(a.id, { name: 'k', role: 'member' })).key;
    const keyB = (await api.plane.tenancy.createKey(b.id, { name: 'k', role: 'member' })).key;
    const created = await call(api, keyB, 'POST', '/v1/sandboxes', {});
    const { id } = idSchema.parse(JSON.parse(String(created.body)));
    await call(api, keyA, 'GET', '/v1/health');
    await call(api, keyA, 'POST', '/v1/sandboxes', {});
    // keyA's org is remembered: the sandbox is read along with the key, in org a, where it is not.
    const read = await api.commands(async () =>
      expect((await call(api, keyA, 'GET', `/v1/sandboxes/${id}`)).status).toBe(404),
    );
    expect(read).toEqual(['BatchGetItemCommand']);
    expect((await call(api, keyB, 'GET', `/v1/sandboxes/${id}`)).status).toBe(200);
  });

  it('takes a pool change made in another container into its very next create', async () => {
    const [api, admin] = [await container(), await container()];
    const org = await api.plane.tenancy.createOrg({ name: 'pools' });
    const { key } = await api.plane.tenancy.createKey(org.id, { name: 'k', role: 'member' });
    await admin.plane.poolAdmin.create(
      { name: 'lab', adapter: 'fake', trust: 'private', maxConcurrency: 0, config: {} },
      'admin',
    );
    const onLab = { placement: { allowedPools: ['lab'] } };
    expect((await call(api, key, 'POST', '/v1/sandboxes', onLab)).status).toBe(202);
    // Unchanged pools cost no read: the version came with the key.
    const unchanged = await api.commands(() => call(api, key, 'POST', '/v1/sandboxes', onLab));
    expect(unchanged).not.toContain('QueryCommand');

    await admin.plane.poolAdmin.delete('lab', 'admin');
    const refused = await call(api, key, 'POST', '/v1/sandboxes', onLab);
    expect(refused.status).toBe(400);
    expect(String(refused.body)).toContain('unknown pool: lab');
  });

  it('terminates in two requests while nobody waits on the pools, and wakes a waiter of another org', async () => {
    // One slot on the only pool, in a table of this test's own: the count of waiters is the table's.
    const oneSlot = parseConfig({
      devMode: true,
      pools: [{ name: 'fake', adapter: 'fake', maxConcurrency: 1 }],
    });
    const [api, worker] = [
      await container(`${tableName}-wake`, oneSlot),
      await container(`${tableName}-wake`, oneSlot),
    ];
    const a = await api.plane.tenancy.createOrg({ name: 'releases' });
    const b = await api.plane.tenancy.createOrg({ name: 'waits' });
    const keyA = (await api.plane.tenancy.createKey(a.id, { name: 'k', role: 'member' })).key;
    const keyB = (await api.plane.tenancy.createKey(b.id, { name: 'k', role: 'member' })).key;
    const running = async (key: string, orgId: string) => {
      const { id } = idSchema.parse(
        JSON.parse(String((await call(api, key, 'POST', '/v1/sandboxes', {})).body)),
      );
      await provisionSandbox(worker.plane, { sandboxId: id, orgId });
      return id;
    };
    const first = await running(keyA, a.id);
    const alone = await api.commands(async () =>
      expect((await call(api, keyA, 'DELETE', `/v1/sandboxes/${first}`)).status).toBe(202),
    );
    expect(alone).toEqual(['BatchGetItemCommand', 'TransactWriteItemsCommand']);

    // The move to terminating released the slot: the next sandbox takes it, and the one after waits.
    const second = await running(keyA, a.id);
    const waiter = await running(keyB, b.id);
    expect((await worker.store.getSandbox(b.id, waiter))?.waitingFor).toBe('capacity');
    api.queue.sent.length = 0;
    const wakes = await api.commands(async () =>
      expect((await call(api, keyA, 'DELETE', `/v1/sandboxes/${second}`)).status).toBe(202),
    );
    expect(wakes).toEqual(['BatchGetItemCommand', 'TransactWriteItemsCommand', 'QueryCommand']);
    expect(api.queue.sent.map((sent) => [sent.queue, sent.message])).toEqual([
      ['terminate', { sandboxId: second, orgId: a.id }],
      ['provision', { sandboxId: waiter, orgId: b.id, wake: true }],
    ]);
  });
});
