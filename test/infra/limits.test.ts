import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { buildApp } from '../../infra/cdk/app.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import type { FunctionName } from '../../lib/function-timeouts.ts';
import { awsLimits, gatewayResponseBody, gatewayResponses } from '../../lib/limits.ts';
import { queueNames } from '../../lib/queue/port.ts';
import { parseJson } from '../helpers/json.ts';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** The CDK construct id of each function, as the stack names it. */
const constructIds: Record<FunctionName, string> = {
  api: 'ApiFunction',
  apiStream: 'ApiStreamFunction',
  provision: 'ProvisionFunction',
  terminate: 'TerminateFunction',
  operations: 'OperationsFunction',
  webhooks: 'WebhooksFunction',
  sweep: 'SweepFunction',
  reconcile: 'ReconcileFunction',
  poolRefresh: 'PoolRefreshFunction',
};

const rawConfig = {
  devMode: true,
  pools: [{ name: 'fake', adapter: 'fake' }],
  scheduler: { provisionTimeoutSeconds: 90, operationTimeoutSeconds: 300 },
};

describe('the local runtime and the deployed stack agree on every AWS limit', () => {
  let resources: Resources;
  let template: Template;
  let runtime: LocalRuntime;

  beforeAll(async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'limits-')), 'differently.json');
    // The same settings, without the local-only fake pool (synth refuses it).
    writeFileSync(path, JSON.stringify({ ...rawConfig, devMode: false, pools: [] }));
    // No bundling: only the template's settings are compared.
    const app = new App({ context: { config: path, 'aws:cdk:bundling-stacks': [] } });
    const stack = buildApp(app);
    template = Template.fromStack(stack);
    resources = template.toJSON().Resources as Resources;
    runtime = await startLocalRuntime({
      config: parseConfig(rawConfig),
      sweepIntervalSeconds: 0,
      reconcileIntervalSeconds: 0,
      poolRefreshIntervalSeconds: 0,
    });
  }, 120_000);

  afterAll(async () => {
    await runtime?.stop();
  });

  const byId = (type: string, id: string) =>
    Object.entries(resources).find(
      ([logical, resource]) => resource.Type === type && new RegExp(`^${id}[0-9A-F]{8}$`).test(logical),
    )?.[1].Properties ?? {};

  it.each(Object.entries(constructIds) as [FunctionName, string][])(
    "runs the %s function with the stack's timeout",
    (name, id) => {
      const deployed = byId('AWS::Lambda::Function', id).Timeout;
      expect(deployed).toBeTypeOf('number');
      expect(runtime.functions[name].timeoutSeconds).toBe(deployed);
    },
  );

  it("gives API Gateway's integration timeouts the same values", () => {
    const methods = Object.values(resources).filter((r) => r.Type === 'AWS::ApiGateway::Method');
    const timeouts = new Set(
      methods.map((m) => (m.Properties.Integration as { TimeoutInMillis?: number }).TimeoutInMillis),
    );
    expect([...timeouts].sort()).toEqual(
      [
        awsLimits.apiIntegrationTimeoutSeconds * 1000,
        awsLimits.apiStreamIntegrationTimeoutSeconds * 1000,
      ].sort(),
    );
  });

  it('answers the gateway responses the stack configures, envelope and status alike', () => {
    const configured = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
      .map((r) => [
        r.Properties.ResponseType,
        r.Properties.StatusCode,
        (r.Properties.ResponseTemplates as Record<string, string>)['application/json'],
      ]);
    expect(configured.sort()).toEqual(
      [
        ['INTEGRATION_FAILURE', '502', gatewayResponseBody(gatewayResponses.integrationFailure)],
        ['INTEGRATION_TIMEOUT', '504', gatewayResponseBody(gatewayResponses.integrationTimeout)],
        ['REQUEST_TOO_LARGE', '413', gatewayResponseBody(gatewayResponses.requestTooLarge)],
      ].sort(),
    );
  });

  it.each(queueNames)('gives the %s queue the same visibility timeout and maxReceiveCount', async (queue) => {
    const id = `WorkQueues${queue[0]?.toUpperCase()}${queue.slice(1)}`;
    const deployed = byId('AWS::SQS::Queue', id);
    const local = await runtime.sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: runtime.sqs.urls[queue], AttributeNames: ['All'] }),
    );
    expect(Number(local.Attributes?.VisibilityTimeout)).toBe(deployed.VisibilityTimeout);
    const redrive = parseJson(
      z.object({ maxReceiveCount: z.coerce.number().optional() }),
      local.Attributes?.RedrivePolicy ?? '{}',
    );
    expect(Number(redrive.maxReceiveCount)).toBe(
      (deployed.RedrivePolicy as { maxReceiveCount: number }).maxReceiveCount,
    );
  });
});
