import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { currentOpenApiDocument } from '../../../infra/openapi-document.ts';
import { DifferentlyClient } from '../../../sdk/client.ts';
import { sdkOperations } from '../../../sdk/operations.ts';

/** The operations of the route table, as the OpenAPI document built from it names them. */
function routeOperations(): string[] {
  const document = z
    .object({ paths: z.record(z.string(), z.record(z.string(), z.object({ operationId: z.string() }))) })
    .parse(currentOpenApiDocument());
  return Object.values(document.paths).flatMap((item) =>
    Object.values(item).map((operation) => operation.operationId),
  );
}

describe('the TS SDK covers the route table', () => {
  it('names exactly the operations the routes declare', () => {
    expect(Object.keys(sdkOperations).sort()).toEqual(routeOperations().sort());
  });

  it('has a callable method for each', () => {
    const client = new DifferentlyClient({ endpoint: 'http://127.0.0.1:9', apiKey: 'unused' });
    for (const [operation, path] of Object.entries(sdkOperations)) {
      let target: unknown = client;
      for (const part of path.split('.'))
        target = typeof target === 'object' && target !== null ? Reflect.get(target, part) : undefined;
      expect(typeof target, `${operation}: ${path}`).toBe('function');
    }
  });
});
