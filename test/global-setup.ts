import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** One DynamoDB Local for the whole run; each suite creates its own table in it. */
export default async function setup(project: TestProject) {
  const local = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', local.endpoint);
  return async () => {
    await local.stop();
  };
}
