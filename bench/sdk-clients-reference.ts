/**
 * The cold-start reference of bench/bundles.bench.ts: a handler module that imports and constructs only
 * the AWS SDK clients the functions use (functions/wiring.ts: DynamoDB with its document client, SQS,
 * EventBridge, Secrets Manager) and does nothing else. The bench bundles it exactly as it bundles a
 * function, so a ratio is what the project's own code and libraries add to a cold start.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export const clients = [
  DynamoDBDocumentClient.from(new DynamoDBClient({})),
  new SQSClient({}),
  new EventBridgeClient({}),
  new SecretsManagerClient({}),
];

export const handler = async (): Promise<object> => ({});
