import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import type { FakeExchange } from '../fakes/fake-http.ts';

/**
 * Holds a fake's answers to a provider's published OpenAPI document (3.1): the operation must exist, the
 * status must be declared (or `default`), the content type must be one the operation declares, an answer
 * declared without content must be empty, and a JSON body must match the declared schema.
 *
 * The published files are not part of this repository (they are the provider's). They are read from
 * DIFFERENTLY_PROVIDER_SPECS, or from ../shared/reference/providers/specs beside the checkout.
 */
export function providerSpecsFolder(): string | undefined {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const candidates = [
    process.env.DIFFERENTLY_PROVIDER_SPECS,
    join(root, '..', 'shared', 'reference', 'providers', 'specs'),
  ];
  return candidates.find((folder): folder is string => folder !== undefined && existsSync(folder));
}

type Json = Record<string, unknown>;

export class PublishedOpenApi {
  readonly #doc: Json;
  readonly #ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  readonly #basePath: string;
  readonly #operations: { method: string; template: string; pattern: RegExp }[] = [];

  /** `source`: a published YAML file, or a document already in memory. */
  constructor(source: string | object) {
    this.#doc = (
      typeof source === 'string' ? parseYaml(readFileSync(source, 'utf8')) : structuredClone(source)
    ) as Json;
    this.#ajv.addSchema(this.#doc, 'spec');
    const servers = (this.#doc.servers ?? []) as { url: string }[];
    this.#basePath = servers[0] === undefined ? '' : new URL(servers[0].url).pathname.replace(/\/$/, '');
    for (const [template, item] of Object.entries((this.#doc.paths ?? {}) as Record<string, Json>))
      for (const method of Object.keys(item))
        this.#operations.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
        });
  }

  /** What is wrong with this answer, or an empty list. */
  problemsOf(exchange: FakeExchange): string[] {
    const url = new URL(exchange.path, 'http://fake');
    const path = url.pathname.startsWith(this.#basePath)
      ? url.pathname.slice(this.#basePath.length) || '/'
      : url.pathname;
    const where = `${exchange.method} ${path} -> ${exchange.status}`;
    const operation = this.#operations.find((o) => o.method === exchange.method && o.pattern.test(path));
    if (operation === undefined) return [`${where}: no such operation in the published API`];
    const pointer = ['paths', operation.template, operation.method.toLowerCase(), 'responses'];
    const responses = this.#at(pointer) as Json;
    const statusKey = [String(exchange.status), `${String(exchange.status)[0]}XX`, 'default'].find(
      (key) => responses[key] !== undefined,
    );
    if (statusKey === undefined)
      return [`${where}: status not declared (declared: ${Object.keys(responses).join(', ')})`];
    let responsePointer = [...pointer, statusKey];
    let response = responses[statusKey] as Json;
    if (typeof response.$ref === 'string') {
      responsePointer = refPointer(response.$ref);
      response = this.#at(responsePointer) as Json;
    }
    const content = response.content as Record<string, unknown> | undefined;
    if (content === undefined)
      return exchange.body.length === 0 ? [] : [`${where}: a body where the API declares none`];
    if (exchange.body.length === 0 && exchange.method === 'HEAD') return [];
    const mediaType = (exchange.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const declared = Object.keys(content).find(
      (type) =>
        type === mediaType ||
        type === '*/*' ||
        (type.endsWith('/*') && mediaType.startsWith(type.slice(0, -1))),
    );
    if (declared === undefined)
      return [
        `${where}: content type ${mediaType || '(none)'} not declared (${Object.keys(content).join(', ')})`,
      ];
    if (!declared.includes('json') || (content[declared] as Json).schema === undefined) return [];
    let body: unknown;
    try {
      body = JSON.parse(exchange.body.toString('utf8'));
    } catch {
      return [`${where}: the body is not JSON`];
    }
    const schemaRef = `spec#/${[...responsePointer, 'content', declared, 'schema'].map(escapePointer).join('/')}`;
    if (this.#ajv.validate({ $ref: schemaRef }, body)) return [];
    return (this.#ajv.errors ?? []).map((e) => `${where}: ${e.instancePath || '(body)'} ${e.message ?? ''}`);
  }

  #at(pointer: string[]): unknown {
    let node: unknown = this.#doc;
    for (const part of pointer) node = (node as Json)[part];
    return node;
  }
}

function refPointer(ref: string): string[] {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function escapePointer(part: string): string {
  return encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'));
}
