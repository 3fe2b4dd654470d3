import { readFile } from 'node:fs/promises';
import { validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { currentOpenApiDocument, openApiText } from '../../../infra/openapi-document.ts';
import { testPlane } from '../../helpers/plane.ts';

type Document = { paths: Record<string, Record<string, { operationId: string }>> };

describe('the OpenAPI document', () => {
  it('has exactly one operation for every route the router serves, and no other', async () => {
    const { plane } = await testPlane();
    const document = currentOpenApiDocument() as Document;
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const routes = plane.routes.map((route) => `${route.method} ${route.path}`);
    expect(operations.sort()).toEqual(routes.sort());
    const ids = operations.length;
    expect(
      new Set(Object.values(document.paths).flatMap((item) => Object.values(item).map((o) => o.operationId)))
        .size,
    ).toBe(ids);
  });

  it('is committed up to date in docs/openapi.json (run `npm run openapi` after changing a route)', async () => {
    const committed = await readFile(new URL('../../../docs/openapi.json', import.meta.url), 'utf8');
    expect(committed).toBe(openApiText());
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validate(structuredClone(currentOpenApiDocument()) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    // The validator does reject a broken document: one without its required info object.
    const broken: Record<string, unknown> = structuredClone(currentOpenApiDocument());
    delete broken.info;
    expect((await validate(broken as never)).valid).toBe(false);
  });

  it('is served at GET /v1/openapi.json without a key', async () => {
    const { plane } = await testPlane();
    const response = await plane.handleHttp({
      method: 'GET',
      path: '/v1/openapi.json',
      query: {},
      headers: {},
      body: undefined,
      requestId: 't',
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(String(response.body))).toEqual(currentOpenApiDocument());
  });
});
