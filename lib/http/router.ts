import { describeIssues, formatIssues } from '../config.ts';
import { ApiError, errors, isApiError, toErrorResponse } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import { withReadAlong } from '../store/request-reads.ts';
import type { Authenticator, Principal } from '../tenancy/auth.ts';
import type * as z from '../zod.ts';
import { documentedStatuses } from './documented-statuses.ts';
import type { HttpRequest, HttpResponse, RouteDefinition } from './types.ts';

/** JSON bodies above this are refused before parsing: API Gateway and Lambda cap payloads at 6 MB. */
export const maxJsonBodyBytes = 1024 * 1024;

interface CompiledRoute {
  definition: RouteDefinition;
  pattern: RegExp;
  paramNames: string[];
}

function compile(definition: RouteDefinition): CompiledRoute {
  const paramNames: string[] = [];
  const source = definition.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    paramNames.push(name);
    return '([^/]+)';
  });
  return { definition, pattern: new RegExp(`^${source}/?$`), paramNames };
}

export interface RouterDeps {
  authenticator: Authenticator;
  log: Log;
  /**
   * Check every response body against the schema its route declares for that status. On in tests and
   * the local runtime, so the documented contract cannot drift from what handlers return.
   */
  validateResponses?: boolean;
}

/**
 * Matches a request to a route, authenticates, parses and validates params, query and body with the
 * route's zod schemas, and maps every thrown error to the envelope in one place.
 */
const anonymous: Principal = { kind: 'anonymous' };

export function createRouter(routes: RouteDefinition[], deps: RouterDeps) {
  const compiled = routes.map(compile);

  return async function handle(request: HttpRequest): Promise<HttpResponse> {
    // The route the request matched, for the check of an error's status against its document.
    const matched: { definition?: RouteDefinition } = {};
    try {
      return await dispatch(request, matched);
    } catch (thrown) {
      let error = thrown;
      let { status, body, masked } = toErrorResponse(error);
      if (
        deps.validateResponses === true &&
        matched.definition !== undefined &&
        !documentedStatuses(matched.definition).includes(status)
      ) {
        error = new Error(
          `${matched.definition.method} ${matched.definition.path} answered ${status} (${body.error.code}: ${body.error.message}), which it does not declare`,
        );
        ({ status, body, masked } = toErrorResponse(error));
      }
      if (masked) {
        deps.log.error('unhandled error', {
          requestId: request.requestId,
          path: request.path,
          error: describeError(error),
        });
      }
      const response = json(status, body);
      // A 401 says how to authenticate, as HTTP asks (RFC 6750): MCP clients and gateways read it, and
      // an offered key that is not valid is `invalid_token` with the reason.
      if (status === 401)
        response.headers['www-authenticate'] =
          request.headers.authorization === undefined
            ? 'Bearer realm="differently"'
            : `Bearer realm="differently", error="invalid_token", error_description="${body.error.message.replace(/["\\]/g, '')}"`;
      // A 405 names the methods the path takes, as HTTP asks.
      if (isApiError(error) && error.code === 'method_not_allowed' && Array.isArray(error.details.allow))
        response.headers.allow = error.details.allow.join(', ');
      return response;
    }
  };

  async function dispatch(
    request: HttpRequest,
    matched: { definition?: RouteDefinition },
  ): Promise<HttpResponse> {
    const allowed: string[] = [];
    for (const candidate of compiled) {
      const match = candidate.pattern.exec(request.path);
      if (match === null) continue;
      allowed.push(candidate.definition.method);
      if (candidate.definition.method !== request.method.toUpperCase()) continue;
      matched.definition = candidate.definition;
      const rawParams = Object.fromEntries(
        candidate.paramNames.map((name, index) => [name, decodePathSegment(match[index + 1] ?? '')]),
      );
      return invoke(candidate.definition, request, rawParams);
    }
    if (allowed.length > 0) {
      throw new ApiError(
        'method_not_allowed',
        `method ${request.method} is not allowed on ${request.path} (allowed: ${allowed.join(', ')})`,
        { method: request.method, allow: allowed },
      );
    }
    throw new ApiError('not_found', `no route for ${request.method} ${request.path}`, { path: request.path });
  }

  async function invoke(
    definition: RouteDefinition,
    request: HttpRequest,
    rawParams: Record<string, string>,
  ): Promise<HttpResponse> {
    const wanted = definition.readAlong?.(rawParams);
    const { principal, along } =
      definition.auth === 'none'
        ? { principal: anonymous, along: {} }
        : await deps.authenticator.authenticate(request.headers.authorization, wanted);
    if (definition.auth === 'admin' && principal.kind !== 'admin') {
      throw errors.forbidden('this route needs the admin key');
    }
    if (principal.kind === 'admin' && principal.orgId !== null && definition.auth === 'admin') {
      if (definition.adminScope !== 'org')
        throw errors.forbidden(
          "this route is the operator's: an admin-role key administers its own organization only (use the bootstrap admin key)",
        );
      // Routes under /v1/admin/orgs/{id} name the org in the path.
      if (definition.path.startsWith('/v1/admin/orgs/{id}') && rawParams.id !== principal.orgId)
        throw errors.notFound('org', rawParams.id ?? '');
    }
    if (definition.auth === 'org' && principal.kind !== 'org') {
      throw errors.forbidden(
        'this route acts for an organization: use an organization key, not the admin key',
      );
    }
    const params = validate('path', definition.params, rawParams);
    const query = validate('query', definition.query, request.query);
    if (definition.rawBody !== undefined && (request.body?.length ?? 0) > definition.rawBody.maxBytes) {
      throw errors.payloadTooLarge(definition.rawBody.maxBytes);
    }
    const body =
      definition.body === undefined ? undefined : validate('body', definition.body, parseJsonBody(request));
    const run = () => definition.handle({ request, principal, params, query, body });
    // What came with the key serves the handler's first reads of it (lib/store/request-reads.ts).
    const result =
      wanted !== undefined && principal.kind === 'org'
        ? await withReadAlong({ ...wanted, orgId: principal.orgId }, along, run)
        : await run();
    if (result.stream !== undefined) {
      return { status: result.status, headers: { ...result.headers }, body: '', stream: result.stream };
    }
    if (result.raw !== undefined) {
      const headers = { 'content-type': 'application/octet-stream', ...result.headers };
      return { status: result.status, headers, body: result.raw };
    }
    if (deps.validateResponses === true) checkResponse(definition, result.status, result.body);
    if (result.body === undefined) return { status: result.status, headers: { ...result.headers }, body: '' };
    return json(result.status, result.body, result.headers);
  }
}

function checkResponse(definition: RouteDefinition, status: number, body: unknown): void {
  if (!documentedStatuses(definition).includes(status)) {
    throw new Error(`${definition.method} ${definition.path} answered ${status}, which it does not declare`);
  }
  const schema = definition.responses[status];
  if (schema === null || schema === undefined) return;
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new Error(
      `${definition.method} ${definition.path} answered a ${status} body that breaks its schema: ${formatIssues(result.error.issues)}`,
    );
  }
}

/** A request's JSON body ({} when empty), refused above maxJsonBodyBytes or when it is not JSON. */
export function parseJsonBody(request: HttpRequest): unknown {
  const body = request.body;
  if (body === undefined || body.length === 0) return {};
  if (body.length > maxJsonBodyBytes) throw errors.payloadTooLarge(maxJsonBodyBytes);
  // Every body is JSON whatever Content-Type says (curl -d sends a form type); parsing decides.
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw errors.invalidRequest(`the body is not valid JSON: ${(error as Error).message}`);
  }
}

function validate<T extends z.ZodMiniType | undefined>(
  where: 'path' | 'query' | 'body',
  schema: T,
  input: unknown,
): T extends z.ZodMiniType ? z.infer<T> : undefined {
  if (schema === undefined) return undefined as T extends z.ZodMiniType ? z.infer<T> : undefined;
  const result = schema.safeParse(input);
  if (!result.success) {
    const issues = result.error.issues;
    throw errors.invalidRequest(`invalid ${where}: ${formatIssues(issues)}`, {
      in: where,
      issues: describeIssues(issues),
    });
  }
  return result.data as T extends z.ZodMiniType ? z.infer<T> : undefined;
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/** A %-escaped path segment; a malformed escape is the caller's error, never a 500. */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw errors.invalidRequest(
      `the path segment ${JSON.stringify(segment.slice(0, 100))} is not valid %-encoding`,
      {
        field: 'path',
      },
    );
  }
}
