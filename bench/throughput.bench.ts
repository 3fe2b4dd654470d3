/**
 * Create -> running throughput on DynamoDB Local (npm run bench), beside its reference from the same run:
 * the raw rate of the same requests on the same DynamoDB Local, with no control plane in between.
 *
 * 1. One sandbox is created and provisioned through the control plane while its requests are recorded:
 *    the API's (key and org with the pools' version, the create transaction) and the provision
 *    worker's (the sandbox with the pools' version, the provisioning and running transactions).
 * 2. Reference: 50 clients replay that sequence, each for its own org and key, with a new sandbox id and
 *    new outbox ids each time, as fast as DynamoDB Local takes them.
 * 3. The control plane: 50 clients, each POST /v1/sandboxes through the router and then the provision
 *    worker, as deployed (audit records linked inline beside the request path).
 * Goal (issue #22): the control plane's rate >= 0.5 x the raw rate.
 */
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { newId, newUlid } from '../lib/ids.ts';
import { provisionSandbox } from '../lib/scheduler/provision.ts';
import { benchPlane, countingDynamoDb, isLinking } from './dynamodb.ts';
import { printTable } from './stats.ts';

const clients = Number(process.env.BENCH_CLIENTS ?? 50);
const perClient = Number(process.env.BENCH_PER_CLIENT ?? 20);
const quota = { maxCPU: 1e6, maxMemoryMiB: 1e9, maxDiskGiB: 1e8, maxSandboxes: 1e6, maxQueued: 1e5 };
const createdSchema = z.object({ id: z.string() });

interface Tenant {
  orgId: string;
  key: string;
  keyId: string;
}

/** A copy of a recorded input with every string passed through `rewrite` (ids swapped for new ones). */
function rewritten(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === 'string') return rewrite(value);
  if (Array.isArray(value)) return value.map((item) => rewritten(item, rewrite));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [rewrite(k), rewritten(v, rewrite)]));
  return value;
}

const db = await countingDynamoDb();
try {
  const { store, plane } = await benchPlane(db, `bench-throughput-${Date.now()}`, { linkInline: true });
  const tenants: Tenant[] = [];
  for (let i = 0; i < clients; i++) {
    const org = await plane.tenancy.createOrg({ name: `client-${i}`, quota });
    const { key } = await plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
    tenants.push({ orgId: org.id, key, keyId: key.slice(0, key.indexOf('.')) });
  }
  const createAndProvision = async (tenant: Tenant) => {
    const response = await plane.handleHttp({
      method: 'POST',
      path: '/v1/sandboxes',
      query: {},
      headers: { authorization: `Bearer ${tenant.key}` },
      body: Buffer.from('{}'),
      requestId: 'bench',
    });
    if (response.status !== 202) throw new Error(`create answered ${response.status}`);
    const { id } = createdSchema.parse(JSON.parse(String(response.body)));
    const outcome = await provisionSandbox(plane, { sandboxId: id, orgId: tenant.orgId });
    if (outcome.kind !== 'done') throw new Error(`provision ended ${outcome.kind}`);
    return id;
  };

  // 1. Record one warm create -> running (each container has served its key and loaded the pools).
  const first = tenants[0];
  if (first === undefined) throw new Error('no clients');
  await createAndProvision(first);
  await store.linkingIdle();
  const recorded: { command: string; input: unknown; text: string }[] = [];
  const stop = db.listen((command, input, output) => {
    if (output !== undefined) return;
    const text = JSON.stringify(input);
    if (!isLinking(command, text)) recorded.push({ command, input: structuredClone(input), text });
  });
  const recordedId = await createAndProvision(first);
  stop();
  await store.linkingIdle();
  // The outbox ids of the recorded changes: each replay writes new ones (their puts require absence).
  const outboxIds = new Set<string>();
  for (const { text } of recorded) {
    for (const match of text.matchAll(/#OUTBOX","SK":"([0-9A-Z]{26})"/g))
      if (match[1]) outboxIds.add(match[1]);
  }

  // 2. The reference: the same requests, replayed by 50 clients.
  // The inputs are the SDK's own, recorded a moment ago: replayed under the command that took them.
  const send = (command: string, input: unknown) => {
    const doc = db.doc;
    switch (command) {
      case 'BatchGetItemCommand':
        return doc.send(new BatchGetCommand(input as ConstructorParameters<typeof BatchGetCommand>[0]));
      case 'TransactWriteItemsCommand':
        return doc.send(
          new TransactWriteCommand(input as ConstructorParameters<typeof TransactWriteCommand>[0]),
        );
      case 'GetItemCommand':
        return doc.send(new GetCommand(input as ConstructorParameters<typeof GetCommand>[0]));
      case 'QueryCommand':
        return doc.send(new QueryCommand(input as ConstructorParameters<typeof QueryCommand>[0]));
      case 'UpdateItemCommand':
        return doc.send(new UpdateCommand(input as ConstructorParameters<typeof UpdateCommand>[0]));
      case 'PutItemCommand':
        return doc.send(new PutCommand(input as ConstructorParameters<typeof PutCommand>[0]));
      default:
        throw new Error(`no replay for ${command}`);
    }
  };
  const replay = async (tenant: Tenant) => {
    const sandboxId = newId('sandbox');
    const fresh = new Map([...outboxIds].map((id) => [id, newUlid()]));
    const rewrite = (text: string) => {
      let result = text
        .replaceAll(recordedId, sandboxId)
        .replaceAll(first.orgId, tenant.orgId)
        .replaceAll(first.keyId, tenant.keyId);
      for (const [old, now] of fresh) result = result.replaceAll(old, now);
      return result;
    };
    for (const { command, input } of recorded) await send(command, rewritten(input, rewrite));
  };
  const rate = async (work: (tenant: Tenant) => Promise<unknown>) => {
    const started = performance.now();
    await Promise.all(
      tenants.map(async (tenant) => {
        for (let i = 0; i < perClient; i++) await work(tenant);
      }),
    );
    return (clients * perClient) / ((performance.now() - started) / 1000);
  };
  const raw = await rate(replay);
  const plane50 = await rate(createAndProvision);
  await store.linkingIdle();
  printTable(
    `create -> running, ${clients} clients x ${perClient} sandboxes each, DynamoDB Local`,
    ['run', 'requests per sandbox', 'sandboxes/s', 'x raw'],
    [
      ['raw: the same requests replayed (reference)', String(recorded.length), raw.toFixed(1), '1.00'],
      [
        'control plane: API create + provision worker',
        String(recorded.length),
        plane50.toFixed(1),
        (plane50 / raw).toFixed(2),
      ],
    ],
  );
  console.log(`throughput ratio = ${(plane50 / raw).toFixed(2)} (goal >= 0.5)\n`);
} finally {
  await db.stop();
}
