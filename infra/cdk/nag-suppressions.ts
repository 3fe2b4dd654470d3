import { type CfnElement, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { runtimePoolSecretPrefix } from '../../lib/pools/credentials.ts';
import type { ControlPlaneStack } from './control-plane-stack.ts';

/**
 * Every cdk-nag AwsSolutions finding this app accepts, in one place, each with the reason it is
 * accepted. Anything not listed here fails `cdk synth`.
 */
export function applyNagSuppressions(stack: ControlPlaneStack): void {
  const acknowledge = (scope: IConstruct, id: string, reason: string) =>
    Validations.of(scope).acknowledge({ id, reason });

  for (const fn of Object.values(stack.functions)) {
    acknowledge(
      fn,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions; Lambda active tracing needs them on *.',
    );
    acknowledge(
      fn,
      `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(stack.table.table.node.defaultChild as CfnElement)}.Arn>/index/*]`,
      "The store queries the table's own GSIs (listings, the sweep's status index, the reconciler's pool index); the grant is scoped to this table's indexes.",
    );
    acknowledge(
      fn,
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${runtimePoolSecretPrefix}*]`,
      'Pools registered through the admin API name their provider secret at runtime; the functions that call adapters may read secrets under this one prefix only (docs/tenancy.md), never the admin key.',
    );
  }
  acknowledge(
    stack.adminKey,
    'AwsSolutions-SMG4',
    'The bootstrap admin key is rotated by an operator (docs/runbook.md): automatic rotation would lock operators out mid-session. Functions read a new value within 5 minutes.',
  );
  acknowledge(
    stack.schedules.deadLetterQueue,
    'AwsSolutions-SQS3',
    'This queue is itself a dead-letter queue: the EventBridge Scheduler target DLQ of the schedules (alarmed on in Monitoring).',
  );
  for (const target of [stack.functions.sweep, stack.functions.reconcile, stack.functions.poolRefresh]) {
    acknowledge(
      stack.schedules,
      `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(target.fn.node.defaultChild as CfnElement)}.Arn>:*]`,
      "The Scheduler's role may invoke the scheduled functions and their versions (function ARN plus ':*'), nothing else.",
    );
  }
  const api = stack.api.api;
  acknowledge(
    api,
    'AwsSolutions-APIG2',
    'Every request is validated in the api function against the zod schemas its router declares (the same schemas generate the OpenAPI document); a second, API Gateway model copy would drift.',
  );
  acknowledge(
    api,
    'AwsSolutions-APIG4',
    'Authorization is the bearer API key checked by the api function on every route but GET /v1/health: org keys are stored as SHA-256 hashes and compared in constant time, revoked keys refused on their next call.',
  );
  acknowledge(
    api,
    'AwsSolutions-COG4',
    'Clients are machines (agent frameworks, CI) holding organization-scoped API keys, not Cognito users; see APIG4.',
  );
  acknowledge(
    api,
    'AwsSolutions-APIG3',
    "WAF rules are the operator's, per deployment (docs/deploy.md shows how to attach a web ACL to the stage); the API itself authenticates every request and throttles the stage.",
  );
  acknowledge(
    api,
    'AwsSolutions-APIG6',
    "JSON access logs record every request; execution logging would need the account-wide API Gateway CloudWatch role, which this stack must not take over from the account's other APIs.",
  );
}
