import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonObject, parseJson } from '../../helpers/json.ts';
import { OpenApiValidator } from '../../helpers/openapi-validator.ts';

/** The validating gateway's checks, each seen to fail, against the API's own document. */
const document = parseJson(
  jsonObject,
  readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8'),
);
const validator = new OpenApiValidator(document);
const sandbox = '/v1/sandboxes/sbx_01J00000000000000000000000';
const exchange = {
  method: 'POST',
  path: `${sandbox}/exec`,
  requestHasBody: true,
  requestContentType: 'application/json',
  status: 200,
  contentType: 'application/json',
  body: Buffer.from(
    JSON.stringify({ exitCode: 0, stdout: '', stderr: '', durationMs: 1, truncated: false, timedOut: false }),
  ),
};

describe('the OpenAPI validator', () => {
  it('passes an exchange the document declares', () => {
    expect(validator.problemsOf(exchange)).toEqual([]);
    expect(
      validator.problemsOf({
        ...exchange,
        path: `${sandbox}/exec?stream=1`,
        contentType: 'application/x-ndjson',
        body: Buffer.from('{"exitCode":0}\n'),
      }),
    ).toEqual([]);
  });

  it("refuses curl -d's form content type on a JSON operation", () => {
    expect(
      validator.problemsOf({ ...exchange, requestContentType: 'application/x-www-form-urlencoded' }),
    ).toEqual([
      expect.stringMatching(/request content type application\/x-www-form-urlencoded not accepted/),
    ]);
  });

  it('refuses an undeclared status, an undeclared content type and a body off its schema', () => {
    expect(validator.problemsOf({ ...exchange, status: 418 })).toEqual([
      expect.stringMatching(/status not declared/),
    ]);
    expect(validator.problemsOf({ ...exchange, contentType: 'text/plain' })).toEqual([
      expect.stringMatching(/content type text\/plain not declared/),
    ]);
    expect(
      validator.problemsOf({ ...exchange, body: Buffer.from('{"exitCode":"zero"}') }).length,
    ).toBeGreaterThan(0);
    expect(validator.problemsOf({ ...exchange, method: 'PUT' })).toEqual([
      expect.stringMatching(/no such operation/),
    ]);
  });

  it('declares the error statuses the router answers on every route of a kind', () => {
    const responses = (document as { paths: Record<string, Record<string, { responses: object }>> }).paths;
    for (const [path, item] of Object.entries(responses))
      for (const [method, operation] of Object.entries(item)) {
        const statuses = Object.keys(operation.responses);
        expect(statuses, `${method} ${path}`).toContain('500');
        if (path !== '/v1/health' && path !== '/v1/openapi.json')
          expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403']));
        if (path.includes('{'))
          expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['400', '404']));
      }
  });

  it('names its servers and says which routes need no key (what redocly lint asked for)', () => {
    const doc = document as {
      servers?: { url: string }[];
      security?: unknown[];
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(doc.servers?.length).toBeGreaterThan(0);
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/v1/health']?.get?.security).toEqual([]);
    expect(doc.paths['/v1/openapi.json']?.get?.security).toEqual([]);
    expect(doc.paths['/v1/sandboxes']?.get?.security).toBeUndefined();
  });
});
