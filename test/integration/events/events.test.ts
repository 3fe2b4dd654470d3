import { readFile } from 'node:fs/promises';
import type { APIGatewayProxyEvent, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createApiHandler } from '../../../functions/api.ts';
import { createOperationsHandler } from '../../../functions/operations.ts';
import { createPoolRefreshHandler } from '../../../functions/pool-refresh.ts';
import { createProvisionHandler } from '../../../functions/provision.ts';
import { createReconcileHandler } from '../../../functions/reconcile.ts';
import { createSweepHandler } from '../../../functions/sweep.ts';
import { createTerminateHandler } from '../../../functions/terminate.ts';
import { sandboxSchema } from '../../../lib/schemas/sandboxes.ts';
import { parseJson } from '../../helpers/json.ts';
import { testPlane } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/** What the handlers read of an API Gateway proxy event and of an SQS event: a fixture missing it fails here. */
const apiEventShape = z.looseObject({
  httpMethod: z.string(),
  path: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string().nullable(),
  isBase64Encoded: z.boolean(),
  requestContext: z.looseObject({ requestId: z.string() }),
});
const sqsEventShape = z.looseObject({
  Records: z.array(
    z.looseObject({
      messageId: z.string(),
      body: z.string(),
      attributes: z.looseObject({ ApproximateReceiveCount: z.string() }),
    }),
  ),
});
const apiEvent = z.custom<APIGatewayProxyEvent>((value) => apiEventShape.safeParse(value).success);
const sqsEvent = z.custom<SQSEvent>((value) => sqsEventShape.safeParse(value).success);

async function load<S extends z.ZodType>(schema: S, name: string): Promise<z.output<S>> {
  return parseJson(schema, await readFile(new URL(`../../../events/${name}`, import.meta.url), 'utf8'));
}

/** The ids in events/ are examples; each test swaps in ids that exist in its own store. */
function withIds<S extends z.ZodType>(
  schema: S,
  event: z.output<S>,
  ids: Record<string, string>,
): z.output<S> {
  let text = JSON.stringify(event);
  for (const [from, to] of Object.entries(ids)) text = text.replaceAll(from, to);
  return parseJson(schema, text);
}

const exampleSandbox = /sbx_[0-9A-Z]{26}/;
const exampleOrg = /org_[0-9A-Z]{26}/;

describe('events/ drive the handlers they are for', async () => {
  const createEvent = await load(apiEvent, 'api-create-sandbox.json');
  const execEvent = await load(apiEvent, 'api-exec.json');
  const provisionEvent = await load(sqsEvent, 'provision-sqs.json');
  const terminateEvent = await load(sqsEvent, 'terminate-sqs.json');
  const operationsEvent = await load(sqsEvent, 'operations-sqs.json');
  const exampleKey = (createEvent.headers.Authorization ?? '').replace('Bearer ', '');
  const exampleSandboxId = exampleSandbox.exec(JSON.stringify(provisionEvent))?.[0] ?? '';
  const exampleOrgId = exampleOrg.exec(JSON.stringify(provisionEvent))?.[0] ?? '';

  it('walks a sandbox through api create, provision, api exec, a stop the operations worker finishes, and terminate', async () => {
    // No worker runs on its own here and the API does not wait: the events below drive every step.
    const { plane, adapters, queue } = await testPlane({ operationWaitSeconds: 0 });
    queue.onSend = undefined;
    const org = await plane.tenancy.createOrg({ name: 'events' });
    const { key } = await plane.tenancy.createKey(org.id, { name: 'events', role: 'member' });
    const api = createApiHandler(plane);

    const created = await api(withIds(apiEvent, createEvent, { [exampleKey]: key }));
    expect(created.statusCode, created.body).toBe(202);
    const sandbox = sandboxSchema.parse(JSON.parse(created.body));
    expect(sandbox).toMatchObject({
      status: 'queued',
      labels: { team: 'platform' },
      resources: { cpu: 2, memoryMiB: 2048, diskGiB: 10 },
      envKeys: ['CI'],
    });
    const ids = { [exampleSandboxId]: sandbox.id, [exampleOrgId]: org.id, [exampleKey]: key };

    const provisioned = await createProvisionHandler(plane)(withIds(sqsEvent, provisionEvent, ids));
    expect(provisioned).toEqual({ batchItemFailures: [] });
    expect((await plane.store.getSandbox(org.id, sandbox.id))?.status).toBe('running');

    const exec = await api(withIds(apiEvent, execEvent, ids));
    expect(exec.statusCode, exec.body).toBe(200);
    expect(JSON.parse(exec.body)).toMatchObject({ exitCode: 0, stdout: 'echo hi\n' });

    const stop = await api({
      ...withIds(apiEvent, execEvent, ids),
      path: `/v1/sandboxes/${sandbox.id}/stop`,
      body: null,
    });
    expect(stop.statusCode, stop.body).toBe(202);
    expect(JSON.parse(stop.body)).toMatchObject({ status: 'stopping' });
    const operated = await createOperationsHandler(plane)(withIds(sqsEvent, operationsEvent, ids));
    expect(operated).toEqual({ batchItemFailures: [] });
    expect((await plane.store.getSandbox(org.id, sandbox.id))?.status).toBe('stopped');

    await plane.sandboxes.delete(orgPrincipal(org.id), sandbox.id);
    const terminated = await createTerminateHandler(plane)(withIds(sqsEvent, terminateEvent, ids));
    expect(terminated).toEqual({ batchItemFailures: [] });
    expect((await plane.store.getSandbox(org.id, sandbox.id))?.status).toBe('terminated');
    expect(adapters.first.instanceCount() + adapters.second.instanceCount()).toBe(0);
  });

  it('runs the sweep from the schedule event, and refuses any other event', async () => {
    const { plane } = await testPlane();
    const sweepHandler = createSweepHandler(plane);
    const report = await sweepHandler(await load(z.unknown(), 'sweep-schedule.json'));
    expect(report).toEqual({
      expired: 0,
      requeuedProvisions: 0,
      requeuedTerminations: 0,
      requeuedOperations: 0,
      deadLetteredOperations: 0,
      deadLetteredProvisions: 0,
      deadLetteredTerminations: 0,
      skipped: 0,
    });
    await expect(sweepHandler({ task: 'reconcile' })).rejects.toThrow(/expects/);
  });

  it('runs a reconcile pass from its schedule event, and refuses any other event', async () => {
    const { plane } = await testPlane();
    const reconcileHandler = createReconcileHandler(plane);
    const report = await reconcileHandler(await load(z.unknown(), 'reconcile-schedule.json'));
    expect(report.ran).toBe(true);
    expect(report.pools.map((p) => p.pool)).toEqual(['first', 'second']);
    await expect(reconcileHandler({ source: 'differently.schedule', task: 'sweep' })).rejects.toThrow(
      /expects/,
    );
  });

  it('refreshes every pool from its schedule event, and refuses any other event', async () => {
    const { plane } = await testPlane();
    const handler = createPoolRefreshHandler(plane);
    const report = await handler(await load(z.unknown(), 'pool-refresh-schedule.json'));
    expect(report.pools).toEqual([
      { pool: 'first', healthy: true, reason: null },
      { pool: 'second', healthy: true, reason: null },
    ]);
    expect((await plane.store.listPoolViews()).map((v) => v.pool).sort()).toEqual(['first', 'second']);
    await expect(handler({ source: 'differently.schedule', task: 'sweep' })).rejects.toThrow(/expects/);
  });

  it('reports a malformed record as a batch item failure without failing the others', async () => {
    const { plane } = await testPlane();
    const broken = structuredClone(provisionEvent);
    const good = provisionEvent.Records[0];
    if (good === undefined) throw new Error('the provision event has no record');
    broken.Records = [{ ...good, messageId: 'bad', body: '{"sandboxId": 42}' }, good];
    const response = await createProvisionHandler(plane)(broken);
    // The good record names a sandbox this store does not know: acknowledged, not retried.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
  });
});
