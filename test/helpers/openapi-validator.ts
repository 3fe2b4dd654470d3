import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';

/**
 * Holds HTTP exchanges to an OpenAPI 3.1 document, as a validating gateway (Prism) would: the operation
 * must exist; a request body's media type must be one the operation accepts; the answer's status must be
 * declared (or `default`), its content type one the status declares, an answer declared without content
 * must be empty, and a JSON body must match the declared schema. Used for providers' published documents
 * (their fakes' answers) and for Differently's own (docs/openapi.json, the API's answers).
 */
export interface HttpExchange {
  method: string;
  /** Path and query, as sent. */
  path: string;
  /** The request's media type, where it had a body. */
  requestContentType?: string | undefined;
  requestHasBody?: boolean;
  status: number;
  contentType: string | undefined;
  /** The answer (or its first bytes: a JSON body cut short is not checked against its schema). */
  body: Buffer;
  bodyComplete?: boolean;
}

/**
 * Providers' published files are not part of this repository (they are the providers'). They are read
 * from DIFFERENTLY_PROVIDER_SPECS, or from ../shared/reference/providers/specs beside the checkout.
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

export class OpenApiValidator {
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
    const servers = (this.#doc.servers ?? []) as {
      url: string;
      variables?: Record<string, { default: string }>;
    }[];
    const server = servers[0];
    // Server variables at their defaults: only the base path matters here.
    const serverUrl = server?.url.replace(
      /\{(\w+)\}/g,
      (_, name: string) => server.variables?.[name]?.default ?? '',
    );
    this.#basePath =
      serverUrl === undefined ? '' : new URL(serverUrl, 'http://host').pathname.replace(/\/$/, '');
    for (const [template, item] of Object.entries((this.#doc.paths ?? {}) as Record<string, Json>))
      for (const method of Object.keys(item))
        this.#operations.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
        });
  }

  /** What is wrong with this exchange, or an empty list. */
  problemsOf(exchange: HttpExchange): string[] {
    const url = new URL(exchange.path, 'http://host');
    const path = url.pathname.startsWith(this.#basePath)
      ? url.pathname.slice(this.#basePath.length) || '/'
      : url.pathname;
    const where = `${exchange.method} ${path} -> ${exchange.status}`;
    const operation = this.#operations.find((o) => o.method === exchange.method && o.pattern.test(path));
    if (operation === undefined) return [`${where}: no such operation in the document`];
    const problems: string[] = [];
    if (exchange.requestHasBody === true) {
      const requestBody = this.#at([
        'paths',
        operation.template,
        operation.method.toLowerCase(),
        'requestBody',
      ]) as Json | undefined;
      const accepted = Object.keys((requestBody?.content ?? {}) as Json);
      const sent = mediaTypeOf(exchange.requestContentType);
      // A body the operation does not read is allowed by HTTP and ignored; a body it reads must say its type.
      if (accepted.length > 0 && !accepted.some((type) => matches(type, sent)))
        problems.push(
          `${where}: request content type ${sent || '(none)'} not accepted (${accepted.join(', ')})`,
        );
    }
    return [...problems, ...this.#responseProblems(exchange, operation, where)];
  }

  #responseProblems(
    exchange: HttpExchange,
    operation: { method: string; template: string },
    where: string,
  ): string[] {
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
    const isJson = declared === 'application/json' || declared.endsWith('+json');
    if (!isJson || (content[declared] as Json).schema === undefined) return [];
    if (exchange.bodyComplete === false) return [];
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

function mediaTypeOf(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function matches(declared: string, sent: string): boolean {
  return (
    declared === sent ||
    declared === '*/*' ||
    (declared.endsWith('/*') && sent.startsWith(declared.slice(0, -1)))
  );
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
