import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { env, sdkEndpointVariables } from '../../functions/environment.ts';
import { buildApp } from '../../infra/cdk/app.ts';
import { cdkJson } from '../helpers/cdk-json.ts';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** The functions that call adapters (every one but the sweep), as their roles' logical ids begin. */
const adapterCallers = [
  'Api',
  'ApiStream',
  'Operations',
  'PoolRefresh',
  'Provision',
  'Reconcile',
  'Terminate',
];

function writeConfig(config: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cdk-config-')), 'differently.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

function synth(config: unknown = { pools: [] }, context: Record<string, string> = {}) {
  const app = new App({
    context: {
      ...cdkJson.context,
      config: writeConfig(config),
      // No bundling: these tests read the template (test/infra/sam-invoke.test.ts runs the bundles).
      'aws:cdk:bundling-stacks': [],
      ...context,
    },
  });
  const stack = buildApp(app);
  // Synthesis runs the cdk-nag validation plugin; a finding without a written reason throws.
  app.synth();
  return { app, stack, template: Template.fromStack(stack) };
}

function logicalIdOf(resources: Resources, type: string, pathPart: string): string {
  // Logical ids are the construct path without separators plus an 8-character hash.
  const exact = new RegExp(`^${pathPart}[0-9A-F]{8}$`);
  const entry = Object.entries(resources).find(([id, resource]) => resource.Type === type && exact.test(id));
  if (entry === undefined) throw new Error(`no ${type} whose id starts with ${pathPart}`);
  return entry[0];
}

describe('the CDK app', () => {
  let template: Template;
  let resources: Resources;

  beforeAll(() => {
    template = synth().template;
    resources = template.toJSON().Resources as Resources;
  });

  it('builds every function on nodejs24.x, arm64, with tracing, its log group and the environment contract', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).length).toBe(9);
    template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      TracingConfig: { Mode: 'Active' },
      LoggingConfig: { LogGroup: Match.anyValue() },
      Environment: {
        Variables: Match.objectLike({
          DIFFERENTLY_TABLE_NAME: Match.anyValue(),
          DIFFERENTLY_PROVISION_QUEUE_URL: Match.anyValue(),
          DIFFERENTLY_TERMINATE_QUEUE_URL: Match.anyValue(),
          DIFFERENTLY_OPERATIONS_QUEUE_URL: Match.anyValue(),
          DIFFERENTLY_CONFIG: '/var/task/differently.config.json',
          POWERTOOLS_SERVICE_NAME: 'differently',
        }),
      },
    });
    // Every variable the functions read is declared, so `sam local invoke --env-vars` can set it.
    for (const fn of Object.values(functions)) {
      const declared = Object.keys(fn.Properties.Environment.Variables);
      expect(declared).toEqual(expect.arrayContaining([...Object.values(env), ...sdkEndpointVariables]));
      expect(fn.Properties.Environment.Variables.DIFFERENTLY_ADMIN_KEY).toBe('');
      // No Node option that costs at every cold start: `--enable-source-maps` reads every loaded file's
      // map at import (docs/performance.md); stacks are mapped offline (`npm run stack-trace`).
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS ?? '').not.toContain('source-maps');
    }
  });

  it('gives the admin key secret to the api function only, by exact ARN', () => {
    const secret = logicalIdOf(resources, 'AWS::SecretsManager::Secret', 'AdminKey');
    const policies = Object.entries(template.findResources('AWS::IAM::Policy'));
    const readers = policies.filter(([, policy]) =>
      JSON.stringify(policy.Properties.PolicyDocument).includes(`"Ref":"${secret}"`),
    );
    expect(readers.map(([id]) => id).sort()).toEqual([
      expect.stringMatching(/^ApiRole/),
      expect.stringMatching(/^ApiStreamRole/),
    ]);
    const workers = policies.filter(([id]) =>
      /^(Provision|Terminate|Sweep|Reconcile|PoolRefresh)Role/.test(id),
    );
    expect(workers.length).toBe(5);
    for (const [, policy] of workers) {
      expect(JSON.stringify(policy.Properties.PolicyDocument)).not.toContain(`"Ref":"${secret}"`);
    }
  });

  it('publishes lifecycle events to its own bus, each function allowed PutEvents on that bus only', () => {
    const bus = logicalIdOf(resources, 'AWS::Events::EventBus', 'LifecycleEvents');
    template.allResourcesProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ DIFFERENTLY_EVENT_BUS_NAME: { Ref: bus } }) },
    });
    for (const [id, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
      if (!/^(Api|ApiStream|Provision|Terminate|Sweep|Reconcile|PoolRefresh)Role/.test(id)) continue;
      const statements = policy.Properties.PolicyDocument.Statement as {
        Action: unknown;
        Resource: unknown;
      }[];
      const putEvents = statements.filter((s) => JSON.stringify(s.Action).includes('events:PutEvents'));
      expect(putEvents.length).toBe(1);
      expect(putEvents[0]?.Resource).toEqual({ 'Fn::GetAtt': [bus, 'Arn'] });
    }
  });

  it('lets exactly the functions that queue lifecycle calls and idle checks send to the operations queue', () => {
    const queue = logicalIdOf(resources, 'AWS::SQS::Queue', 'WorkQueuesOperations');
    const senders = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, policy]) =>
        (policy.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[]).some(
          (statement) =>
            JSON.stringify(statement.Action).includes('sqs:SendMessage') &&
            JSON.stringify(statement.Resource).includes(`"${queue}"`),
        ),
      )
      .map(([id]) => id.replace(/Role.*$/, ''))
      .sort();
    expect(senders).toEqual(['Api', 'ApiStream', 'Operations', 'Provision', 'Sweep']);
  });

  it('lets no function delete or reconfigure the table', () => {
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
      const document = JSON.stringify(policy.Properties.PolicyDocument);
      expect(document).not.toMatch(/dynamodb:(DeleteTable|UpdateTable|\*)/);
    }
  });

  it('keeps the table: on demand, PITR, deletion protection, retained, TTL and the store’s GSIs', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        GlobalSecondaryIndexes: [
          Match.objectLike({ IndexName: 'GSI1' }),
          Match.objectLike({ IndexName: 'GSI2' }),
          Match.objectLike({ IndexName: 'GSI3' }),
        ],
      }),
    });
  });

  it('sets queue visibility to six times the worker timeout, with DLQs and the maxReceiveCount the backoff needs', () => {
    const timeoutOf = (prefix: string) =>
      (resources[logicalIdOf(resources, 'AWS::Lambda::Function', prefix)]?.Properties.Timeout as number) ?? 0;
    const queue = (prefix: string) =>
      resources[logicalIdOf(resources, 'AWS::SQS::Queue', prefix)]?.Properties ?? {};
    const provision = queue('WorkQueuesProvision');
    const terminate = queue('WorkQueuesTerminate');
    const operations = queue('WorkQueuesOperations');
    expect(provision.VisibilityTimeout).toBe(6 * timeoutOf('ProvisionFunction'));
    expect(terminate.VisibilityTimeout).toBe(6 * timeoutOf('TerminateFunction'));
    expect(operations.VisibilityTimeout).toBe(6 * timeoutOf('OperationsFunction'));
    expect(operations.RedrivePolicy).toMatchObject({ maxReceiveCount: 10 });
    expect(provision.RedrivePolicy).toMatchObject({ maxReceiveCount: 1000 });
    expect(terminate.RedrivePolicy).toMatchObject({ maxReceiveCount: 100 });
    template.allResourcesProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
  });

  it('maps the queues to the workers with partial batch failures and a concurrency budget', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 4);
    template.allResourcesProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: Match.anyValue() },
    });
  });

  it.each(['sweep', 'reconcile', 'pool-refresh'])(
    'schedules the %s every minute with its input, a short retry policy and a DLQ',
    (task) => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'rate(1 minute)',
        Target: Match.objectLike({
          Input: JSON.stringify({ source: 'differently.schedule', task }),
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 120 },
          DeadLetterConfig: { Arn: Match.anyValue() },
        }),
      });
    },
  );

  it('serves the exec route in response-streaming mode from the streaming handler, for up to 15 minutes', () => {
    const stream = logicalIdOf(resources, 'AWS::Lambda::Function', 'ApiStreamFunction');
    expect(resources[stream]?.Properties).toMatchObject({ Handler: 'index.streamHandler', Timeout: 900 });
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      Integration: Match.objectLike({
        Type: 'AWS_PROXY',
        ResponseTransferMode: 'STREAM',
        TimeoutInMillis: 900_000,
        Uri: Match.objectLike({
          'Fn::Join': [
            '',
            Match.arrayWith([{ 'Fn::GetAtt': [stream, 'Arn'] }, '/response-streaming-invocations']),
          ],
        }),
      }),
    });
  });

  it("streams exactly the exec and process attach routes, the MCP endpoint and the E2B facade's process.Start, Connect, WatchDir and the code interpreter's execute (POST), as the local runtime routes them", () => {
    const streamed = Object.values(resources).filter(
      (r) =>
        r.Type === 'AWS::ApiGateway::Method' &&
        (r.Properties.Integration as { ResponseTransferMode?: string } | undefined)?.ResponseTransferMode ===
          'STREAM',
    );
    const pathOf = (resourceId: unknown): string => {
      const ref = (resourceId as { Ref?: string } | undefined)?.Ref;
      const resource = ref === undefined ? undefined : resources[ref];
      if (resource === undefined) return '';
      return `${pathOf(resource.Properties.ParentId)}/${String(resource.Properties.PathPart)}`;
    };
    expect(
      streamed.map((m) => `${String(m.Properties.HttpMethod)} ${pathOf(m.Properties.ResourceId)}`).sort(),
    ).toEqual([
      'POST /e2b/execute',
      'POST /e2b/filesystem.Filesystem/WatchDir',
      'POST /e2b/process.Process/Connect',
      'POST /e2b/process.Process/Start',
      'POST /execute',
      'POST /filesystem.Filesystem/WatchDir',
      'POST /process.Process/Connect',
      'POST /process.Process/Start',
      'POST /v1/mcp',
      'POST /v1/sandboxes/{id}/exec',
      'POST /v1/sandboxes/{id}/processes/{pid}/attach',
    ]);
  });

  it('reserves no concurrency (the reconciler’s lease keeps it single), unless the operator asks for it', () => {
    template.allResourcesProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: Match.absent(),
    });
    const reserved = synth({ pools: [] }, { reconcileReservedConcurrency: '1' }).template.toJSON()
      .Resources as Resources;
    const id = logicalIdOf(reserved, 'AWS::Lambda::Function', 'ReconcileFunction');
    expect(reserved[id]?.Properties.ReservedConcurrentExecutions).toBe(1);
    expect(() => synth({ pools: [] }, { reconcileReservedConcurrency: 'one' })).toThrow(/positive integer/);
  });

  it('sends a scheduled invocation that still fails after Lambda’s retries to the schedules’ dead-letter queue', () => {
    const dlq = logicalIdOf(resources, 'AWS::SQS::Queue', 'SchedulesDeadLetters');
    const configs = Object.values(template.findResources('AWS::Lambda::EventInvokeConfig'));
    expect(configs.length).toBe(3);
    for (const config of configs) {
      expect(config.Properties).toMatchObject({
        MaximumRetryAttempts: 2,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [dlq, 'Arn'] } } },
      });
    }
    const targets = configs.map((c) => JSON.stringify(c.Properties.FunctionName)).sort();
    expect(targets).toEqual(
      ['PoolRefreshFunction', 'ReconcileFunction', 'SweepFunction'].map((name) =>
        expect.stringContaining(name),
      ),
    );
  });

  it('serves a Regional REST API with throttling, access logs and binary media types', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', {
      EndpointConfiguration: { Types: ['REGIONAL'] },
      BinaryMediaTypes: ['*/*'],
    });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 }),
      ]),
      TracingEnabled: true,
    });
  });

  it('alarms on dead letters, worker errors, API 5xx and latency, each linking to the runbook and notifying the topic', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBe(16);
    const topic = logicalIdOf(resources, 'AWS::SNS::Topic', 'MonitoringAlarms');
    const runbook = readFileSync(new URL('../../docs/runbook.md', import.meta.url), 'utf8');
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmDescription).toMatch(/docs\/runbook\.md#[a-z-]+$/);
      const section = String(alarm.Properties.AlarmDescription).replace(/^.*#/, '');
      expect(runbook).toContain(`## ${section}\n`);
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topic }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topic }]);
    }
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    const subscribed = synth({ pools: [] }, { alarmEmail: 'oncall@example.com' }).template;
    subscribed.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
  });

  it("turns the API functions' warm hit and miss lines into metrics (the miss by its reason, the hit's instance age)", () => {
    const filters = Object.values(template.findResources('AWS::Logs::MetricFilter')).map(
      (filter) => filter.Properties,
    );
    const named = (name: string) =>
      filters.filter((filter) => filter.MetricTransformations?.[0]?.MetricName === name);
    // One per API function (buffered and streamed) and metric.
    for (const name of ['WarmHits', 'WarmMisses', 'WarmInstanceAgeSeconds'])
      expect(named(name)).toHaveLength(2);
    expect(named('WarmHits')[0]).toMatchObject({
      FilterPattern: '{ $.message = "warm hit" }',
      MetricTransformations: [{ MetricNamespace: 'Differently', MetricValue: '1' }],
    });
    expect(named('WarmMisses')[0]).toMatchObject({
      FilterPattern: '{ $.message = "warm miss" }',
      MetricTransformations: [{ Dimensions: [{ Key: 'reason', Value: '$.reason' }] }],
    });
    expect(named('WarmInstanceAgeSeconds')[0]?.MetricTransformations[0]?.MetricValue).toBe('$.ageSeconds');
  });

  it('creates what docs/deploy.md says it creates, in the numbers it gives', () => {
    const deployDoc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const typeOf: Record<string, string> = {
      'Lambda functions': 'AWS::Lambda::Function',
      'SQS queues': 'AWS::SQS::Queue',
      'EventBridge Scheduler schedules': 'AWS::Scheduler::Schedule',
      'CloudWatch alarms': 'AWS::CloudWatch::Alarm',
      'SNS topics': 'AWS::SNS::Topic',
      'DynamoDB tables': 'AWS::DynamoDB::Table',
      'EventBridge buses': 'AWS::Events::EventBus',
      'Secrets Manager secrets': 'AWS::SecretsManager::Secret',
      'REST APIs': 'AWS::ApiGateway::RestApi',
      'CloudWatch dashboards': 'AWS::CloudWatch::Dashboard',
    };
    const rows = [...deployDoc.matchAll(/^\| ([A-Za-z ]+) \| (\d+) \|/gm)].map(([, name, count]) => [
      name,
      Number(count),
    ]);
    expect(rows.map(([name]) => name).sort()).toEqual(Object.keys(typeOf).sort());
    for (const [name, count] of rows) {
      const type = typeOf[String(name)] ?? '';
      expect(Object.keys(template.findResources(type)).length, `${name} (${type})`).toBe(count);
    }
  });

  it('synthesizes with every feature flag the CDK currently recommends set to its recommended value', () => {
    for (const [flag, value] of Object.entries(CURRENTLY_RECOMMENDED_FLAGS))
      expect(cdkJson.context[flag], flag).toEqual(value);
  });
});

describe('provider credentials', () => {
  it('grants each referenced secret by exact ARN to the functions that call adapters, not to the sweep', () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:provider-key-AbCdEf';
    const { template } = synth({
      pools: [
        {
          name: 'p',
          adapter: 'opensandbox',
          maxConcurrency: 10,
          config: { apiURL: 'https://sandbox.internal' },
          credentials: { secretArn: arn },
        },
      ],
    });
    const readersOf = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, policy]) => JSON.stringify(policy.Properties.PolicyDocument).includes(arn))
      .map(([id]) => id.replace(/Role.*$/, ''))
      .sort();
    expect(readersOf).toEqual(adapterCallers);
  });

  it("lets the same functions read runtime pools' secrets under differently/pools/ only", () => {
    const { template } = synth({ pools: [] });
    const readers = Object.entries(template.findResources('AWS::IAM::Policy')).filter(([, policy]) =>
      JSON.stringify(policy.Properties.PolicyDocument).includes(':secret:differently/pools/*'),
    );
    expect(readers.map(([id]) => id.replace(/Role.*$/, '')).sort()).toEqual(adapterCallers);
  });
});

describe('the IAM of a lambda-microvms pool', () => {
  const image = 'arn:aws:lambda:eu-west-1:123456789012:microvm-image:differently-guest';
  const role = 'arn:aws:iam::123456789012:role/differently-sandboxes';
  type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

  /** Each function's statements that mention Lambda MicroVMs (or pass a role or connector for them). */
  function microvmStatements(template: Template): Record<string, Statement[]> {
    const out: Record<string, Statement[]> = {};
    for (const [id, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
      const statements = (policy.Properties.PolicyDocument.Statement as Statement[]).filter((s) =>
        [s.Action].flat().some((a) => /Microvm|PassNetworkConnector|iam:PassRole/.test(a)),
      );
      if (statements.length > 0) out[id.replace(/Role.*$/, '')] = statements;
    }
    return out;
  }
  const microvmAction = /Microvm|PassNetworkConnector|iam:PassRole/;
  // CDK merges statements on one resource: ListMicrovms may share `*` with X-Ray's actions.
  const actionsOf = (statements: Statement[] = []) =>
    statements
      .flatMap((s) => [s.Action].flat())
      .filter((a) => microvmAction.test(a))
      .sort();

  it('grants each function only the MicroVM actions it uses, on the pool image, and lists on * alone', () => {
    const { template } = synth({
      pools: [
        {
          name: 'mvm',
          adapter: 'lambda-microvms',
          trust: 'private',
          maxConcurrency: 50,
          config: { image, region: 'eu-west-1', executionRoleArn: role },
        },
      ],
    });
    const granted = microvmStatements(template);
    expect(Object.keys(granted).sort()).toEqual(adapterCallers);
    expect(actionsOf(granted.Provision)).toEqual([
      'iam:PassRole',
      'lambda:CreateMicrovmAuthToken',
      'lambda:GetMicrovm',
      'lambda:PassNetworkConnector',
      'lambda:RunMicrovm',
    ]);
    expect(actionsOf(granted.Terminate)).toEqual(['lambda:GetMicrovm', 'lambda:TerminateMicrovm']);
    expect(actionsOf(granted.Operations)).toEqual([
      'lambda:CreateMicrovmAuthToken',
      'lambda:GetMicrovm',
      'lambda:ResumeMicrovm',
      'lambda:SuspendMicrovm',
    ]);
    expect(actionsOf(granted.Reconcile)).toEqual([
      'lambda:CreateMicrovmAuthToken',
      'lambda:GetMicrovm',
      'lambda:ListMicrovms',
      'lambda:TerminateMicrovm',
    ]);
    expect(actionsOf(granted.PoolRefresh)).toEqual([
      'lambda:GetMicrovmImage',
      'lambda:GetMicrovmImageVersion',
    ]);
    expect(actionsOf(granted.Api)).toEqual([
      'lambda:CreateMicrovmAuthToken',
      'lambda:GetMicrovm',
      'lambda:GetMicrovmImage',
      'lambda:GetMicrovmImageVersion',
    ]);
    for (const statements of Object.values(granted))
      for (const statement of statements) {
        const actions = [statement.Action].flat();
        if (actions.includes('lambda:ListMicrovms')) {
          expect(statement.Resource).toBe('*');
          expect(actions.filter((a) => /Microvm/.test(a))).toEqual(['lambda:ListMicrovms']);
        } else if (actions.some((a) => /Microvm/.test(a))) expect(statement.Resource).toBe(image);
      }
    // The execution role, passed to Lambda only; the managed default connectors by exact ARN.
    const pass = granted.Provision?.find((s) => s.Action === 'iam:PassRole');
    expect(pass).toMatchObject({
      Resource: role,
      Condition: { StringEquals: { 'iam:PassedToService': 'lambda.amazonaws.com' } },
    });
    const connectors = JSON.stringify(
      granted.Provision?.find((s) => s.Action === 'lambda:PassNetworkConnector'),
    );
    expect(connectors).toContain(
      ':lambda:eu-west-1:aws:network-connector:aws-network-connector:HTTP_INGRESS',
    );
    expect(connectors).toContain(
      ':lambda:eu-west-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS',
    );
    expect(connectors).not.toContain('*');
  });

  it('grants nothing of Lambda MicroVMs to a stack without such a pool', () => {
    expect(microvmStatements(synth({ pools: [] }).template)).toEqual({});
  });
});

describe('synth-time checks', () => {
  it('fails synth on a bad config, naming the field', () => {
    expect(() => synth({ pools: [{ name: 'x', adapter: 'firecracker' }] })).toThrow(/pools\[0\]\.adapter/);
    expect(() =>
      synth({ pools: [{ name: 'dtn', adapter: 'daytona', config: { class: 'mainframe' } }] }),
    ).toThrow(/pool dtn: config is not valid: class/);
  });

  it('refuses dev-only pools in a deploy config, even with devMode', () => {
    for (const adapter of ['devhost', 'fake'])
      expect(() => synth({ devMode: true, pools: [{ name: 'dev', adapter }] })).toThrow(
        new RegExp(`pool dev: the ${adapter} adapter is for local runs only`),
      );
  });

  it('warns about a pool whose backend reports no capacity (OpenSandbox, Lambda MicroVMs) without maxConcurrency, and not about one with it', () => {
    const pool = { name: 'osb', adapter: 'opensandbox', config: { apiURL: 'https://sandbox.internal' } };
    const warned = synth({ pools: [pool] }).stack;
    Annotations.fromStack(warned).hasWarning(
      '*',
      Match.stringLikeRegexp('pool osb \\(opensandbox\\): without maxConcurrency'),
    );
    const bounded = synth({ pools: [{ ...pool, maxConcurrency: 20 }] }).stack;
    Annotations.fromStack(bounded).hasNoWarning('*', Match.stringLikeRegexp('maxConcurrency'));
  });

  it("routes the sandboxes' hosts: a wildcard custom domain on the API, mapped at the root, its record in the zone", () => {
    const certificateArn =
      'arn:aws:acm:us-east-1:111111111111:certificate/00000000-0000-0000-0000-000000000000';
    const config = { pools: [], e2b: { sandboxDomain: 'sbx.example.com' } };
    expect(() => synth(config)).toThrow(/needs -c sandboxDomainCertificateArn/);
    const { template: withDomain } = synth(config, {
      sandboxDomainCertificateArn: certificateArn,
      sandboxDomainHostedZoneId: 'Z0000000000000000000',
      sandboxDomainHostedZoneName: 'example.com',
    });
    withDomain.hasResourceProperties('AWS::ApiGateway::DomainName', {
      DomainName: '*.sbx.example.com',
      RegionalCertificateArn: certificateArn,
      EndpointConfiguration: { Types: ['REGIONAL'] },
      SecurityPolicy: 'TLS_1_2',
    });
    withDomain.resourceCountIs('AWS::ApiGateway::BasePathMapping', 1);
    withDomain.hasResourceProperties('AWS::Route53::RecordSet', {
      Name: '*.sbx.example.com.',
      Type: 'A',
      HostedZoneId: 'Z0000000000000000000',
    });
    // Without a zone the record is the operator's: its target is an output.
    const { template: noZone } = synth(config, { sandboxDomainCertificateArn: certificateArn });
    noZone.resourceCountIs('AWS::Route53::RecordSet', 0);
    expect(Object.keys(noZone.findOutputs('*')).some((name) => name.includes('RecordTarget'))).toBe(true);
    // And a stack without the setting has none of it.
    synth().template.resourceCountIs('AWS::ApiGateway::DomainName', 0);
  });

  it('fails synth on a cdk-nag finding that has no written reason', () => {
    const app = new App({
      context: { ...cdkJson.context, config: writeConfig({ pools: [] }), 'aws:cdk:bundling-stacks': [] },
    });
    const stack = buildApp(app, { skipAcknowledgements: true });
    expect(stack.stackName).toBe('Differently');
    expect(() => app.synth()).toThrow(/AwsSolutions-APIG4/);
  });
});

describe('synth with a config the operator got wrong', () => {
  it('says what is wrong in one line, without a stack trace, and exits 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bad-config-'));
    const file = join(dir, 'differently.json');
    writeFileSync(file, JSON.stringify({ pools: [{ name: 'x', adapter: 'nope' }] }));
    for (const [config, expected] of [
      [file, `differently: ${file} is not valid: pools[0].adapter: adapter must be one of`],
      [join(dir, 'missing.json'), `differently: the config file ${join(dir, 'missing.json')} does not exist`],
    ] as const) {
      const result = spawnSync(process.execPath, ['infra/cdk/app.ts'], {
        cwd: new URL('../../', import.meta.url).pathname,
        env: { ...process.env, [env.configPath]: config, CDK_OUTDIR: join(dir, 'out') },
        encoding: 'utf8',
      });
      expect(result.status).toBe(1);
      expect(result.stderr.startsWith(expected), result.stderr).toBe(true);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  }, 60_000);
});
