import { Duration, Stack } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  Stats,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { metricsNamespace } from '../../../functions/environment.ts';

export interface MonitoringProps {
  readonly api: RestApi;
  /** Worker and scheduled functions by name, for error alarms. */
  readonly functions: Record<string, IFunction>;
  /** Dead-letter queues by name: anything in them needs an operator. */
  readonly deadLetterQueues: Record<string, IQueue>;
  /** Where docs/runbook.md is published; each alarm links to its section. */
  readonly runbookUrl: string;
  /** An address subscribed to the alarm topic (it confirms the subscription by e-mail). */
  readonly alarmEmail?: string;
  /** The API functions' log groups, whose `warm hit` and `warm miss` lines become the warm pools' metrics. */
  readonly apiLogGroups?: ILogGroup[];
}

/**
 * Alarms that need an operator, each linking to its runbook section and notifying one SNS topic (in
 * alarm and back to OK), and one dashboard. Subscribe the topic to a pager, chat or e-mail (`alarmEmail`).
 */
export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  readonly topic: Topic;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    // Encrypted with a key of its own: CloudWatch may publish to it (an AWS-managed SNS key would refuse it).
    const key = new Key(this, 'AlarmTopicKey', {
      description: 'Differently alarm notifications',
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );
    this.topic = new Topic(this, 'Alarms', {
      displayName: 'Differently alarms',
      masterKey: key,
      enforceSSL: true,
    });
    if (props.alarmEmail !== undefined) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const link = (section: string) => `${props.runbookUrl}#${section}`;
    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      this.#alarm(
        `${name}DeadLetters`,
        queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
        0,
        {
          description: `Messages in the ${name} dead-letter queue. Runbook: ${link('dead-letter-queues')}`,
        },
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      this.#alarm(
        `${name}Errors`,
        fn.metricErrors({ period: Duration.minutes(5), statistic: Stats.SUM }),
        0,
        {
          description: `The ${name} function failed. Runbook: ${link('function-errors')}`,
        },
      );
    }
    this.#alarm(
      'Api5xx',
      props.api.metricServerError({ period: Duration.minutes(5), statistic: Stats.SUM }),
      5,
      {
        description: `The API answered 5xx. Runbook: ${link('api-errors-and-latency')}`,
      },
    );
    this.#alarm(
      'ApiLatency',
      props.api.metricLatency({ period: Duration.minutes(5), statistic: 'p99' }),
      5000,
      {
        description: `The API's p99 latency is above 5 s. Runbook: ${link('api-errors-and-latency')}`,
      },
    );
    // Warm pools (docs/placement.md): a claim's hit with the instance's age, a miss with its reason.
    const fromLines = (
      id: string,
      logGroup: ILogGroup,
      message: string,
      metric: { metricName: string; metricValue: string; dimensions?: Record<string, string> },
      statistic: string,
    ) =>
      new MetricFilter(this, id, {
        logGroup,
        filterPattern: FilterPattern.stringValue('$.message', '=', message),
        metricNamespace: metricsNamespace,
        ...metric,
      }).metric({ statistic });
    const warm = (props.apiLogGroups ?? []).flatMap((logGroup, index) => [
      fromLines(
        `WarmHits${index}`,
        logGroup,
        'warm hit',
        { metricName: 'WarmHits', metricValue: '1' },
        Stats.SUM,
      ),
      fromLines(
        `WarmMisses${index}`,
        logGroup,
        'warm miss',
        { metricName: 'WarmMisses', metricValue: '1', dimensions: { reason: '$.reason' } },
        Stats.SUM,
      ),
      fromLines(
        `WarmAge${index}`,
        logGroup,
        'warm hit',
        { metricName: 'WarmInstanceAgeSeconds', metricValue: '$.ageSeconds' },
        'p50',
      ),
    ]);
    this.dashboard = new Dashboard(this, 'Dashboard', {
      widgets: [
        [
          new GraphWidget({
            title: 'API requests and errors',
            left: [props.api.metricCount(), props.api.metricClientError(), props.api.metricServerError()],
          }),
          new GraphWidget({
            title: 'API latency p99',
            left: [props.api.metricLatency({ statistic: 'p99' })],
          }),
        ],
        [
          new GraphWidget({
            title: 'Function errors',
            left: Object.values(props.functions).map((fn) => fn.metricErrors()),
          }),
          new GraphWidget({
            title: 'Dead-letter queue depth',
            left: Object.values(props.deadLetterQueues).map((q) =>
              q.metricApproximateNumberOfMessagesVisible(),
            ),
          }),
        ],
        ...(warm.length === 0
          ? []
          : [[new GraphWidget({ title: 'Warm pools: hits, misses, instance age', left: warm })]]),
      ],
    });
  }

  #alarm(id: string, metric: IMetric, threshold: number, options: { description: string }): void {
    const alarm = new Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: options.description,
    });
    const notify = new SnsAction(this.topic);
    alarm.addAlarmAction(notify);
    alarm.addOkAction(notify);
    this.alarms.push(alarm);
  }
}
