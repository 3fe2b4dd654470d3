import { Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface SchedulesProps {
  readonly sweep: IFunction;
}

/**
 * EventBridge Scheduler schedules, one minute apart (the finest it offers). Each sends the input the
 * handler expects (events/sweep-schedule.json), retries briefly, and dead-letters what it cannot deliver.
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
    new Schedule(this, 'Sweep', {
      description: 'Differently sweep: TTL expiry, lost and stuck work, dead letters',
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      target: new LambdaInvoke(props.sweep, {
        role,
        input: ScheduleTargetInput.fromObject({ source: 'differently.schedule', task: 'sweep' }),
        retryAttempts: 2,
        maxEventAge: Duration.minutes(2),
        deadLetterQueue: this.deadLetterQueue,
      }),
    });
  }
}
