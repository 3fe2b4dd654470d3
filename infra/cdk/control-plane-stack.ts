import { ArnFormat, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { env } from '../../functions/environment.ts';
import type { Config } from '../../lib/config.ts';
import { type FunctionName, functionTimeouts } from '../../lib/function-timeouts.ts';
import { referencedSecretArns, runtimePoolSecretPrefix } from '../../lib/pools/credentials.ts';
import { queueSettings } from '../../lib/scheduler/backoff.ts';
import { declaredStreamedRoutes } from '../declared-routes.ts';
import { ControlPlaneFunction } from './constructs/control-plane-function.ts';
import { grantLambdaMicrovmsPools } from './constructs/lambda-microvms-access.ts';
import { Monitoring } from './constructs/monitoring.ts';
import { PublicApi } from './constructs/public-api.ts';
import { SandboxDomain } from './constructs/sandbox-domain.ts';
import { Schedules } from './constructs/schedules.ts';
import { StateTable } from './constructs/state-table.ts';
import { WorkQueues } from './constructs/work-queues.ts';

export interface ControlPlaneStackProps extends StackProps {
  /** The validated configuration (pools, policy, quotas, scheduler settings). */
  readonly config: Config;
  /** The same configuration as a JSON file, copied into every function bundle. */
  readonly configFile: string;
  /**
   * Keep the table when the stack is deleted, with deletion protection on.
   * @default true
   */
  readonly retainData?: boolean;
  /**
   * The most provision workers that run at once (the event source mapping's MaximumConcurrency, at
   * least 2): a budget that protects the backends from bursts.
   * @default 10
   */
  readonly provisionConcurrency?: number;
  /** @default 5 */
  readonly terminateConcurrency?: number;
  /** The most operations workers (stop, start, pause, resume, snapshot) at once. @default 5 */
  readonly operationsConcurrency?: number;
  /** The most webhook delivery workers at once. @default 5 */
  readonly webhooksConcurrency?: number;
  /** Where docs/runbook.md is published, for the alarms' links. */
  readonly runbookUrl?: string;
  /** An e-mail address subscribed to the alarm topic (it confirms by e-mail). @default none */
  readonly alarmEmail?: string;
  /**
   * Reserved concurrency for the reconciler. Not needed for correctness: a pass holds a lease in the
   * table, so two never overlap. Reserving takes from the account's unreserved pool, which new accounts
   * (with a low concurrency quota) cannot spare: the deploy would fail.
   * @default none
   */
  readonly reconcileReservedConcurrency?: number;
  /**
   * For config e2b.sandboxDomain (docs/deploy.md "Sandbox hosts"): an ACM certificate for `*.<domain>` in
   * the stack's region, and optionally the domain's Route 53 hosted zone, where the wildcard record is made.
   */
  readonly sandboxDomain?: {
    readonly certificateArn: string;
    readonly hostedZone?: { id: string; name: string } | undefined;
  };
}

/** The control plane: a thin composition of one construct per concern. */
export class ControlPlaneStack extends Stack {
  readonly table: StateTable;
  readonly queues: WorkQueues;
  readonly functions: Record<FunctionName, ControlPlaneFunction>;
  readonly api: PublicApi;
  readonly adminKey: Secret;
  readonly eventBus: EventBus;
  readonly schedules: Schedules;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: ControlPlaneStackProps) {
    super(scope, id, props);
    const settings = queueSettings(props.config);
    // The same timeouts the local runtime enforces (lib/limits.ts).
    const timeouts = functionTimeouts(props.config);
    this.table = new StateTable(this, 'State', { retain: props.retainData ?? true });
    this.queues = new WorkQueues(this, 'WorkQueues', { settings });
    // Lifecycle events (docs/events.md): published by whichever function links audit records.
    this.eventBus = new EventBus(this, 'LifecycleEvents', {
      description: 'Differently sandbox lifecycle events',
    });
    const adminKey = new Secret(this, 'AdminKey', {
      description: 'Differently bootstrap admin key (Authorization: Bearer <this value>)',
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
    });
    this.adminKey = adminKey;

    const common = {
      [env.tableName]: this.table.table.tableName,
      [env.eventBusName]: this.eventBus.eventBusName,
      [env.provisionQueueUrl]: this.queues.provision.queue.queueUrl,
      [env.terminateQueueUrl]: this.queues.terminate.queue.queueUrl,
      [env.operationsQueueUrl]: this.queues.operations.queue.queueUrl,
      [env.webhooksQueueUrl]: this.queues.webhooks.queue.queueUrl,
    };
    const fn = (
      entry: string,
      timeoutSeconds: number,
      extra: Record<string, string> = {},
      reservedConcurrentExecutions?: number,
      handler?: { id: string; name: string },
    ) =>
      new ControlPlaneFunction(this, handler?.id ?? `${entry[0]?.toUpperCase()}${entry.slice(1)}`, {
        entry,
        ...(handler !== undefined && { handler: handler.name }),
        timeout: Duration.seconds(timeoutSeconds),
        configFile: props.configFile,
        environment: { ...common, ...extra },
        ...(reservedConcurrentExecutions !== undefined && { reservedConcurrentExecutions }),
      });
    this.functions = {
      api: fn('api', timeouts.api, { [env.adminKeySecretArn]: adminKey.secretArn }),
      // The streamed routes (exec, MCP, E2B's process.Start): API Gateway streams for up to 15 minutes. Its
      // own entry: only it loads middy's response streaming (functions/api-stream.ts).
      apiStream: fn(
        'api-stream',
        timeouts.apiStream,
        { [env.adminKeySecretArn]: adminKey.secretArn },
        undefined,
        {
          id: 'ApiStream',
          name: 'streamHandler',
        },
      ),
      provision: fn('provision', timeouts.provision),
      terminate: fn('terminate', timeouts.terminate),
      operations: fn('operations', timeouts.operations),
      webhooks: fn('webhooks', timeouts.webhooks),
      sweep: fn('sweep', timeouts.sweep, {
        [env.provisionDlqUrl]: this.queues.provision.deadLetterQueue.queueUrl,
        [env.terminateDlqUrl]: this.queues.terminate.deadLetterQueue.queueUrl,
        [env.operationsDlqUrl]: this.queues.operations.deadLetterQueue.queueUrl,
      }),
      // One pass at a time through the lease it takes in the table; reserved concurrency only on request.
      reconcile: fn('reconcile', timeouts.reconcile, {}, props.reconcileReservedConcurrency),
      poolRefresh: fn('pool-refresh', timeouts.poolRefresh, {}, undefined, {
        id: 'PoolRefresh',
        name: 'handler',
      }),
    };
    const { api, apiStream, provision, terminate, operations, webhooks, sweep, reconcile, poolRefresh } =
      this.functions;

    // Least privilege: each function gets exactly what it uses. Every function that writes links audit
    // records, and linking fans lifecycle events out to webhook deliveries.
    for (const each of Object.values(this.functions)) {
      this.queues.webhooks.queue.grantSendMessages(each.fn);
      this.table.table.grantReadWriteData(each.fn);
      // Every function that writes may link audit records, and linking publishes their events.
      this.eventBus.grantPutEventsTo(each.fn);
    }
    for (const front of [api.fn, apiStream.fn]) {
      adminKey.grantRead(front);
      this.queues.provision.queue.grantSendMessages(front);
      this.queues.terminate.queue.grantSendMessages(front);
      this.queues.operations.queue.grantSendMessages(front);
    }
    this.queues.provision.queue.grantSendMessages(sweep.fn);
    this.queues.terminate.queue.grantSendMessages(sweep.fn);
    this.queues.operations.queue.grantSendMessages(sweep.fn);
    this.queues.operations.deadLetterQueue.grantConsumeMessages(sweep.fn);
    // Operations wake queued sandboxes when a stop releases room.
    this.queues.provision.queue.grantSendMessages(operations.fn);
    // Idle checks (lib/scheduler/idle-check.ts) go on the operations queue, delayed: queued when a
    // sandbox starts running (provision, a resume or start) and again by a check that finds it in use.
    this.queues.operations.queue.grantSendMessages(provision.fn);
    this.queues.operations.queue.grantSendMessages(operations.fn);
    this.queues.provision.queue.grantSendMessages(reconcile.fn);
    this.queues.provision.deadLetterQueue.grantConsumeMessages(sweep.fn);
    this.queues.terminate.deadLetterQueue.grantConsumeMessages(sweep.fn);

    // Provider credentials: each secret the config references, by its exact ARN, to the functions that
    // call adapters (the sweep does not).
    // Pools added through the admin API keep their secrets under the differently/pools/ prefix.
    const credentialArns = [
      ...referencedSecretArns(props.config.pools),
      this.formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: `${runtimePoolSecretPrefix}*`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    ];
    for (const caller of [api, apiStream, provision, terminate, operations, reconcile, poolRefresh]) {
      caller.fn.addToRolePolicy(
        new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: credentialArns }),
      );
    }

    // Lambda MicroVMs pools: IAM is their credential, granted per function and scoped to each pool's image.
    grantLambdaMicrovmsPools(props.config.pools, {
      api: api.fn,
      apiStream: apiStream.fn,
      provision: provision.fn,
      terminate: terminate.fn,
      operations: operations.fn,
      reconcile: reconcile.fn,
      poolRefresh: poolRefresh.fn,
    });

    provision.fn.addEventSource(
      new SqsEventSource(this.queues.provision.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: Math.max(props.provisionConcurrency ?? 10, 2),
      }),
    );
    terminate.fn.addEventSource(
      new SqsEventSource(this.queues.terminate.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: Math.max(props.terminateConcurrency ?? 5, 2),
      }),
    );

    operations.fn.addEventSource(
      new SqsEventSource(this.queues.operations.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: Math.max(props.operationsConcurrency ?? 5, 2),
      }),
    );

    // Deliveries to tenants' endpoints: a slow endpoint holds at most this many workers.
    webhooks.fn.addEventSource(
      new SqsEventSource(this.queues.webhooks.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: Math.max(props.webhooksConcurrency ?? 5, 2),
      }),
    );

    this.api = new PublicApi(this, 'PublicApi', {
      handler: api.fn,
      streamHandler: apiStream.fn,
      streamedRoutes: declaredStreamedRoutes(),
    });
    const sandboxDomainName = props.config.e2b.sandboxDomain;
    if (sandboxDomainName !== undefined) {
      if (sandboxDomainName.includes(':'))
        throw new Error(
          `e2b.sandboxDomain ${sandboxDomainName}: a deployed API listens on 443, name no port`,
        );
      if (props.sandboxDomain === undefined)
        throw new Error(
          `e2b.sandboxDomain ${sandboxDomainName} needs a certificate for *.${sandboxDomainName}: -c sandboxDomainCertificateArn=arn:aws:acm:...`,
        );
      new SandboxDomain(this, 'SandboxDomain', {
        api: this.api.api,
        domainName: sandboxDomainName,
        certificateArn: props.sandboxDomain.certificateArn,
        hostedZone: props.sandboxDomain.hostedZone,
      });
    }
    const schedules = new Schedules(this, 'Schedules', {
      sweep: sweep.fn,
      reconcile: reconcile.fn,
      poolRefresh: poolRefresh.fn,
    });
    this.schedules = schedules;
    const monitoring = new Monitoring(this, 'Monitoring', {
      api: this.api.api,
      functions: {
        Provision: provision.fn,
        Terminate: terminate.fn,
        Operations: operations.fn,
        Webhooks: webhooks.fn,
        Sweep: sweep.fn,
        Reconcile: reconcile.fn,
        PoolRefresh: poolRefresh.fn,
        Api: api.fn,
        ApiStream: apiStream.fn,
      },
      deadLetterQueues: {
        Provision: this.queues.provision.deadLetterQueue,
        Terminate: this.queues.terminate.deadLetterQueue,
        Operations: this.queues.operations.deadLetterQueue,
        Webhooks: this.queues.webhooks.deadLetterQueue,
        Schedules: schedules.deadLetterQueue,
      },
      apiLogGroups: [api.logGroup, apiStream.logGroup],
      runbookUrl: props.runbookUrl ?? 'https://github.com/differently/differently/blob/main/docs/runbook.md',
      ...(props.alarmEmail !== undefined && { alarmEmail: props.alarmEmail }),
    });
    this.monitoring = monitoring;

    new CfnOutput(this, 'ApiUrl', { value: this.api.api.url });
    new CfnOutput(this, 'AdminKeySecret', {
      value: adminKey.secretArn,
      description: 'aws secretsmanager get-secret-value --secret-id <this> --query SecretString',
    });
    new CfnOutput(this, 'TableName', { value: this.table.table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.eventBus.eventBusName });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: monitoring.topic.topicArn,
      description: 'Subscribe your pager, chat or e-mail to this topic: every alarm notifies it',
    });
  }
}
