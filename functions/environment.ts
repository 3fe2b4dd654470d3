/**
 * The environment contract between infra and the functions: every name is set (and granted) by the CDK
 * app and read here, in one place. A missing variable fails the cold start naming it.
 */
export const env = {
  /** Path to the JSON config file, or the config itself inline. */
  configPath: 'DIFFERENTLY_CONFIG',
  configJson: 'DIFFERENTLY_CONFIG_JSON',
  /** The bootstrap admin key itself: local runs only. On AWS the key lives in Secrets Manager. */
  adminKey: 'DIFFERENTLY_ADMIN_KEY',
  adminKeySecretArn: 'DIFFERENTLY_ADMIN_KEY_SECRET_ARN',
  /** `dynamodb` (default on AWS) or `memory` (a single process only). */
  store: 'DIFFERENTLY_STORE',
  tableName: 'DIFFERENTLY_TABLE_NAME',
  /** The custom EventBridge bus lifecycle events go to; unset: none are published. */
  eventBusName: 'DIFFERENTLY_EVENT_BUS_NAME',
  provisionQueueUrl: 'DIFFERENTLY_PROVISION_QUEUE_URL',
  terminateQueueUrl: 'DIFFERENTLY_TERMINATE_QUEUE_URL',
  operationsQueueUrl: 'DIFFERENTLY_OPERATIONS_QUEUE_URL',
  webhooksQueueUrl: 'DIFFERENTLY_WEBHOOKS_QUEUE_URL',
  provisionDlqUrl: 'DIFFERENTLY_PROVISION_DLQ_URL',
  terminateDlqUrl: 'DIFFERENTLY_TERMINATE_DLQ_URL',
  operationsDlqUrl: 'DIFFERENTLY_OPERATIONS_DLQ_URL',
} as const;

/**
 * The AWS SDK's own endpoint settings: declared (empty) on every function so `sam local invoke
 * --env-vars` can point the clients at DynamoDB Local and a local SQS; an empty value means AWS's endpoint.
 */
export const sdkEndpointVariables = ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL_SQS'] as const;

/** Fails the cold start naming every variable of `names` that is unset or empty. */
export function requireAllEnv(...names: string[]): void {
  const missing = names.filter((name) => (process.env[name] ?? '') === '');
  if (missing.length > 0) throw new Error(`missing environment variables: ${missing.join(', ')}`);
}

/** A variable's value; an unset or empty one fails the cold start naming it. */
export function requireEnv(name: string): string {
  requireAllEnv(name);
  return process.env[name] ?? '';
}

/** The CloudWatch namespace of every function's metrics (POWERTOOLS_METRICS_NAMESPACE on Lambda). */
export const metricsNamespace = 'Differently';
