import { Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type ScheduledTask, scheduleEvent } from '../../../functions/schedule-event.ts';

export interface SchedulesProps {
  readonly sweep: IFunction;
  readonly reconcile: IFunction;
  readonly poolRefresh: IFunction;
}

/**
 * EventBridge Scheduler schedules, one minute apart (the finest it offers). Each sends the input the
 * handler expects (events/sweep-schedule.json), retries briefly, and dead-letters what it cannot deliver.
 * The Scheduler invokes asynchronously, so an invocation that fails is Lambda's to retry: after its two
 * retries it goes to the same dead-letter queue (an on-failure destination), which is alarmed on.
 */
export class Schedules extends Construct {
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: SchedulesProps) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    // The schedules' own role (instead of a stack-wide one), allowed to invoke only their targets.
    const role = new Role(this, 'InvokeRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
    for (const target of [props.sweep, props.reconcile, props.poolRefresh]) {
      target.configureAsyncInvoke({
        retryAttempts: 2,
        maxEventAge: Duration.minutes(2),
        onFailure: new SqsDestination(this.deadLetterQueue),
      });
    }
    const every = (id: string, task: ScheduledTask, target: IFunction, description: string) =>
      new Schedule(this, id, {
        description,
        schedule: ScheduleExpression.rate(Duration.minutes(1)),
        target: new LambdaInvoke(target, {
          role,
          input: ScheduleTargetInput.fromObject(scheduleEvent(task)),
          retryAttempts: 2,
          maxEventAge: Duration.minutes(2),
          deadLetterQueue: this.deadLetterQueue,
        }),
      });
    every('Sweep', 'sweep', props.sweep, 'Differently sweep: TTL expiry, lost and stuck work, dead letters');
    every(
      'Reconcile',
      'reconcile',
      props.reconcile,
      'Differently reconciler: orphans, adoption, lost instances',
    );
    every(
      'PoolRefresh',
      'pool-refresh',
      props.poolRefresh,
      'Differently pool-refresh: capabilities, health and capacity of every pool',
    );
  }
}
