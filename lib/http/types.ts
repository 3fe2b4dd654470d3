import type { StreamWrite } from '../sandboxes/exec-stream.ts';
import type { OrgPrincipal, Principal, WantedAlong } from '../tenancy/auth.ts';
import type * as z from '../zod.ts';

/** A transport-neutral request: built from an API Gateway event in Lambda and locally alike. */
export interface HttpRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: Buffer | undefined;
  requestId: string;
  /** Aborted when the client goes away before the answer is complete (streamed routes stop their work). */
  signal?: AbortSignal | undefined;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
  /**
   * A streamed body: calls `write` with each chunk as it is produced and resolves when the body is
   * complete. Set instead of `body` (which is then empty) for streamed routes.
   */
  stream?: (write: StreamWrite) => Promise<void>;
}

export type AuthRequirement = 'none' | 'admin' | 'org';

/**
 * The caller a route's handler sees, by what the route requires (the router has checked it): routes that
 * need no key get the anonymous principal, never an admin-kind stand-in.
 */
export type PrincipalFor<A extends AuthRequirement> = A extends 'none'
  ? Extract<Principal, { kind: 'anonymous' }>
  : A extends 'admin'
    ? Extract<Principal, { kind: 'admin' }>
    : OrgPrincipal;

export interface RouteContext<P, Q, B, A extends AuthRequirement = AuthRequirement> {
  request: HttpRequest;
  principal: PrincipalFor<A>;
  params: P;
  query: Q;
  body: B;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  /** Bytes sent as they are (file content) instead of a JSON body. */
  raw?: Buffer;
  /** A streamed body (see HttpResponse.stream). */
  stream?: (write: StreamWrite) => Promise<void>;
  headers?: Record<string, string>;
}

/**
 * One route: its schemas are both the validation the router applies and the documentation the
 * OpenAPI document is generated from.
 */
export interface RouteDefinition<
  P extends z.ZodMiniType = z.ZodMiniType,
  Q extends z.ZodMiniType = z.ZodMiniType,
  B extends z.ZodMiniType = z.ZodMiniType,
  A extends AuthRequirement = AuthRequirement,
> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  summary: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * The body is bytes, passed to the handler as `request.body`, not parsed: application/octet-stream
   * unless `mediaType` says otherwise (the MCP endpoint's JSON-RPC, parsed by the MCP SDK).
   */
  rawBody?: { maxBytes: number; mediaType?: string };
  /** The media types of the answers a `null` response schema stands for (default: file bytes). */
  rawResponse?: { mediaTypes: string[]; description: string };
  responses: Record<number, z.ZodMiniType | null>;
  /**
   * Admin routes: `org` where an organization's administrator (an admin-role key) may call it for its own
   * org (the handler or the router checks which org); otherwise the route is the operator's alone.
   */
  adminScope?: 'org';
  /** A second media type of the success answer, streamed (exec's `?stream=1`). */
  streamResponse?: { mediaType: string; description: string };
  /**
   * Served by the response-streaming function (up to 15 minutes, bytes sent as produced) rather than the
   * buffered one: the CDK app and the local runtime route it there from this declaration.
   */
  streamed?: true;
  /** The route served as an MCP tool too: lib/mcp/tools.ts builds the tool from this route. */
  tool?: RouteTool;
  /**
   * Records the handler reads next, fetched with the caller's key in one round trip (from the raw path
   * parameters, before validation: an id that is not one is simply not read along). The handler's
   * services take them from the request's reads (lib/store/request-reads.ts), not as an argument.
   */
  readAlong?: (rawParams: Record<string, string>) => WantedAlong;
  handle(context: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>, A>): Promise<RouteResult>;
}

/**
 * A route as an MCP tool. Its input is the route's path parameters, query and body in one object (a
 * streamed route's query, which only selects streaming, is left out: the tool streams when the client
 * sends a progress token); a raw-body route takes `content` (UTF-8) or `contentBase64`, a raw answer is
 * given as text, or base64 when it is not UTF-8. The tool answers the route's body.
 */
export interface RouteTool {
  name: string;
  description: string;
  /**
   * The tool answers the sandbox once it has settled (create: running or failed), unless called with
   * `wait: false`; the route itself answers at once.
   */
  waits?: true;
  /** The answer's text for a reader, where its JSON is not the clearest (exec: exit code, then output). */
  text?: (body: unknown) => string;
}

/** Keeps each route's handler typed against its own schemas and caller while the table holds them all. */
export function route<
  P extends z.ZodMiniType,
  Q extends z.ZodMiniType,
  B extends z.ZodMiniType,
  A extends AuthRequirement,
>(definition: RouteDefinition<P, Q, B, A>): RouteDefinition {
  return definition as unknown as RouteDefinition;
}
