import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors.ts';
import { json, maxJsonBodyBytes, parseJsonBody } from '../http/router.ts';
import type { HttpRequest, HttpResponse } from '../http/types.ts';
import { describeError, type Log } from '../log.ts';
import type { SandboxProcesses } from '../sandboxes/processes.ts';
import type { SandboxOperations } from '../sandboxes/sandbox-operations.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import { type Authenticator, bearerToken, type OrgPrincipal } from '../tenancy/auth.ts';
import { codeInterpreterPort, E2bCodeInterpreter } from './code-interpreter.ts';
import { ConnectError, connectCodes, endStream, firstEnvelope, parseJson } from './connect-protocol.ts';
import {
  type E2bAnswer,
  E2bControlApi,
  type E2bControlDeps,
  e2bError,
  e2bErrorOf,
  parseBody,
} from './control-api.ts';
import { connectErrorOf, E2bEnvd, envdPath } from './envd.ts';
import { e2bPrefix } from './surface.ts';
import { watchDir, watchDirSchema } from './watch-dir.ts';

/** envd's port, the one E2B SDKs address (code-interpreter's is 49999; previews are not served). */
const envdPort = '49983';
/** E2B's default user, the one calls act as. */
const e2bUser = 'user';

export interface E2bFacadeDeps {
  sandboxes: SandboxService;
  operations: SandboxOperations;
  processes: SandboxProcesses;
  authenticator: Authenticator;
  templates: readonly string[];
  templateMap: E2bControlDeps['templateMap'];
  sandboxDomain: string | undefined;
  createWaitMs: number;
  allowedPools: readonly string[] | undefined;
  log: Log;
}

const sandboxPath = /^\/(?:v2\/)?sandboxes\/([^/]+)(\/[a-z]+)?$/;

/**
 * The E2B-compatible API, served under `/e2b` on the API's own URL (docs/e2b.md): an E2B SDK with
 * `E2B_API_URL` and `E2B_SANDBOX_URL` both set to `<Differently URL>/e2b` runs unchanged. A request with
 * an `E2b-Sandbox-Id` header is for envd (the in-sandbox daemon), any other for the control API.
 */
export function createE2bFacade(deps: E2bFacadeDeps): (request: HttpRequest) => Promise<HttpResponse> {
  const control = new E2bControlApi(deps);
  const envd = new E2bEnvd(deps);
  const interpreter = new E2bCodeInterpreter(deps);

  async function controlCall(request: HttpRequest, path: string): Promise<E2bAnswer> {
    // E2B SDKs send the key in X-API-KEY; a Bearer one (curl, other clients) is taken too.
    const apiKey = request.headers['x-api-key'] ?? bearerToken(request.headers.authorization);
    const { principal } = await deps.authenticator.authenticate(
      apiKey === undefined ? undefined : `Bearer ${apiKey}`,
    );
    if (principal.kind !== 'org') {
      throw errors.forbidden(
        'the E2B API acts for an organization: use an organization key, not the admin key',
      );
    }
    const key = apiKey ?? '';
    const method = request.method.toUpperCase();
    if (path === '/v2/sandboxes' || path === '/sandboxes') {
      if (method === 'POST') return control.create(principal, key, parseJsonBody(request));
      if (method === 'GET') return control.list(principal, request.query);
    }
    const match = sandboxPath.exec(path);
    if (match !== null) {
      const id = decodeURIComponent(match[1] ?? '');
      const action = match[2];
      if (action === undefined && method === 'GET') return control.get(principal, id, key);
      if (action === undefined && method === 'DELETE') return control.kill(principal, id);
      if (action === '/timeout' && method === 'POST')
        return control.setTimeout(principal, id, parseJsonBody(request));
      if (action === '/pause' && method === 'POST') return control.pause(principal, id);
      if (action === '/metrics' && method === 'GET') return control.metrics(principal, id);
      if (action === '/connect' && method === 'POST')
        return control.connect(principal, id, key, parseJsonBody(request));
    }
    return e2bError(
      501,
      `${method} ${path} is not offered by Differently's E2B API (docs/e2b.md lists what is)`,
    );
  }

  /**
   * `@e2b/code-interpreter`'s Jupyter routes (./code-interpreter.ts). Its context calls carry no
   * X-Access-Token, only the E2B-Traffic-Access-Token that create and connect answer (the same token).
   */
  async function codeInterpreterCall(
    request: HttpRequest,
    path: string,
    sandboxId: string,
  ): Promise<HttpResponse> {
    try {
      const principal = await deps.authenticator.authenticateSandbox(
        request.headers['x-access-token'] ?? request.headers['e2b-traffic-access-token'],
        sandboxId,
      );
      const method = request.method.toUpperCase();
      if (path === '/execute' && method === 'POST')
        return await interpreter.execute(principal, sandboxId, parseJsonBody(request), request.signal);
      if (path === '/contexts' && method === 'POST')
        return json(200, await interpreter.createContext(principal, sandboxId, parseJsonBody(request)));
      if (path === '/contexts' && method === 'GET')
        return json(200, await interpreter.listContexts(principal, sandboxId));
      const context = /^\/contexts\/([^/]+)(\/restart)?$/.exec(path);
      if (context !== null) {
        const contextId = decodeURIComponent(context[1] ?? '');
        if (context[2] === undefined && method === 'DELETE') {
          await interpreter.removeContext(principal, sandboxId, contextId);
          return { status: 204, headers: {}, body: '' };
        }
        if (context[2] !== undefined && method === 'POST') {
          await interpreter.restartContext(principal, sandboxId, contextId);
          return { status: 204, headers: {}, body: '' };
        }
      }
      return answerOf(
        e2bError(501, `the code interpreter's ${method} ${path} is not offered by Differently (docs/e2b.md)`),
      );
    } catch (error) {
      const { answer, masked } = e2bErrorOf(error);
      if (masked) deps.log.error('E2B code interpreter call failed', { path, error: describeError(error) });
      return answerOf(answer);
    }
  }

  /**
   * A port of the sandbox other than envd's (`getHost(port)`, E2B Embed's header routing): a redirect to
   * the backend's own URL for it, path and query kept (307, so a POST stays one). Public to whoever has
   * the sandbox's id, as E2B's ports are; nothing of the control plane is reachable through it.
   */
  async function portPreview(
    request: HttpRequest,
    path: string,
    sandboxId: string,
    port: string,
  ): Promise<HttpResponse> {
    try {
      const number = Number(port);
      if (!/^\d{1,5}$/.test(port) || number < 1 || number > 65_535)
        throw errors.invalidRequest(`port ${port} is not a port number`);
      const { url } = await deps.operations.previewUrl(sandboxId, number);
      const target = new URL(url);
      target.pathname = `${target.pathname.replace(/\/$/, '')}${path}`;
      for (const [name, value] of Object.entries(request.query)) target.searchParams.set(name, value);
      return { status: 307, headers: { location: target.toString(), 'cache-control': 'no-store' }, body: '' };
    } catch (error) {
      const { answer, masked } = e2bErrorOf(error);
      if (masked) deps.log.error('E2B port preview failed', { port, error: describeError(error) });
      return answerOf(answer);
    }
  }

  /**
   * E2B's signed file URL (uploadUrl, downloadUrl): `signature` is v1_ and the base64 SHA-256 of
   * `path:operation:user:token[:expiration]` (the SDK's src/sandbox/signature.ts), over one of the
   * sandbox's tokens, which the URL does not carry; it holds for that path and operation only, until its
   * expiration when it has one.
   */
  async function signedFileCaller(request: HttpRequest, sandboxId: string): Promise<OrgPrincipal> {
    const { signature = '', signature_expiration: expiration, path = '', username = '' } = request.query;
    if (expiration !== undefined && !(Number(expiration) * 1000 > Date.now()))
      throw errors.unauthenticated('the signed URL has expired');
    const operation = request.method.toUpperCase() === 'GET' ? 'read' : 'write';
    const record = await deps.operations.findForSignedUrl(sandboxId);
    return deps.authenticator.authenticateSigned(record.orgId, sandboxId, (token) => {
      const raw = `${path}:${operation}:${username}:${token}${expiration === undefined ? '' : `:${expiration}`}`;
      const expected = `v1_${createHash('sha256').update(raw).digest('base64').replace(/=+$/, '')}`;
      return (
        expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature))
      );
    });
  }

  async function envdCall(request: HttpRequest, path: string, sandboxId: string): Promise<HttpResponse> {
    const port = request.headers['e2b-sandbox-port'] ?? envdPort;
    if (port === codeInterpreterPort) return codeInterpreterCall(request, path, sandboxId);
    if (port !== envdPort) return portPreview(request, path, sandboxId, port);
    const unary = /^\/((?:process\.Process|filesystem\.Filesystem)\/[A-Za-z]+)$/.exec(path)?.[1];
    const isRpc = unary !== undefined;
    try {
      const principal: OrgPrincipal =
        request.headers['x-access-token'] === undefined &&
        request.query.signature !== undefined &&
        path === '/files'
          ? await signedFileCaller(request, sandboxId)
          : await deps.authenticator.authenticateSandbox(request.headers['x-access-token'], sandboxId);
      const user = sandboxUserOf(userOf(request));
      await deps.sandboxes.requireRunAs(principal, sandboxId, user);
      const method = request.method.toUpperCase();
      if (path === '/process.Process/Start' && method === 'POST') {
        const deadline = request.headers['connect-timeout-ms'];
        const stream = await envd.processStart(
          principal,
          sandboxId,
          request.body ?? Buffer.alloc(0),
          deadline === undefined ? undefined : Number(deadline),
          request.signal,
          user,
        );
        return { status: 200, headers: { 'content-type': 'application/connect+json' }, body: '', stream };
      }
      if (path === '/process.Process/Connect' && method === 'POST') {
        const stream = await envd.processConnect(
          principal,
          sandboxId,
          request.body ?? Buffer.alloc(0),
          request.signal,
        );
        return { status: 200, headers: { 'content-type': 'application/connect+json' }, body: '', stream };
      }
      if (path === '/filesystem.Filesystem/WatchDir' && method === 'POST') {
        const watch = parseBody(watchDirSchema, firstEnvelope(request.body ?? Buffer.alloc(0)), 'WatchDir');
        const deadline = request.headers['connect-timeout-ms'];
        const stream = await watchDir(
          deps.sandboxes,
          principal,
          sandboxId,
          { path: envdPath(watch.path), recursive: watch.recursive === true },
          deadline === undefined ? undefined : Number(deadline),
          request.signal,
        );
        return { status: 200, headers: { 'content-type': 'application/connect+json' }, body: '', stream };
      }
      if (path === '/process.Process/StreamInput' && method === 'POST') {
        const answer = await envd.streamInput(principal, sandboxId, request.body ?? Buffer.alloc(0));
        return { status: 200, headers: { 'content-type': 'application/connect+json' }, body: answer };
      }
      if (unary !== undefined && method === 'POST' && isConnectStream(request.headers['content-type'])) {
        // A streamed call not served here: Connect's streaming answer (200, the error in the end-stream
        // envelope), so the SDK reads `unimplemented` naming it rather than an HTTP status it shows as internal.
        return {
          status: 200,
          headers: { 'content-type': 'application/connect+json' },
          body: endStream({
            code: 'unimplemented',
            message: `${unary} is not offered by Differently's E2B facade (docs/e2b.md lists what is)`,
          }),
        };
      }
      if (unary !== undefined && method === 'POST') {
        if ((request.body?.length ?? 0) > maxJsonBodyBytes)
          throw new ConnectError('invalid_argument', 'the request is too large');
        const answer = await envd.unary(
          principal,
          sandboxId,
          unary,
          parseJson(request.body ?? Buffer.alloc(0)),
        );
        return json(200, answer);
      }
      if (path === '/health' && method === 'GET') return answerOf(await envd.health(principal, sandboxId));
      if (path === '/files' && method === 'GET') {
        const content = await envd.readFile(principal, sandboxId, request.query.path ?? '');
        return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: content };
      }
      if (path === '/files' && method === 'POST') {
        const written = await envd.writeFiles(
          principal,
          sandboxId,
          request.query,
          request.headers,
          request.body ?? Buffer.alloc(0),
        );
        return json(200, written);
      }
      return answerOf(e2bError(501, `envd's ${method} ${path} is not offered by Differently (docs/e2b.md)`));
    } catch (error) {
      if (isRpc) {
        const { code, message, masked } = connectErrorOf(error);
        if (masked) deps.log.error('E2B envd call failed', { path, error: describeError(error) });
        // A streamed call's error is its end-stream envelope (an HTTP status is shown as internal).
        if (isConnectStream(request.headers['content-type']))
          return {
            status: 200,
            headers: { 'content-type': 'application/connect+json' },
            body: endStream({ code, message }),
          };
        return json(connectCodes[code], { code, message });
      }
      const { answer, masked } = e2bErrorOf(error);
      if (masked) deps.log.error('E2B envd call failed', { path, error: describeError(error) });
      return answerOf(answer);
    }
  }

  return async (request) => {
    const path = request.path.slice(e2bPrefix.length) || '/';
    const sandboxId = request.headers['e2b-sandbox-id'];
    if (sandboxId !== undefined) return envdCall(request, path, sandboxId);
    try {
      return answerOf(await controlCall(request, path));
    } catch (error) {
      const { answer, masked } = e2bErrorOf(error);
      if (masked) deps.log.error('E2B API call failed', { path, error: describeError(error) });
      return answerOf(answer);
    }
  };
}

/**
 * The user a call asks to act as: envd's `Authorization: Basic base64(user:)` (commands and filesystem
 * RPCs) or the `username` query (/files). The SDK sends one only when the caller names it.
 */
function userOf(request: HttpRequest): string | undefined {
  const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (basic !== undefined) return Buffer.from(basic, 'base64').toString('utf8').split(':')[0];
  return request.query.username;
}

/**
 * Who a call acts as: E2B's default user, `user` (undefined: the sandbox's default user; on devhost uid
 * 1000 in the jail, whose home is /home/user), or `root`, honoured where the pool offers exec.root and
 * refused with the reason elsewhere; any other name is not one of E2B's users.
 */
function sandboxUserOf(user: string | undefined): 'root' | undefined {
  if (user === undefined || user === '' || user === e2bUser) return undefined;
  if (user === 'root') return 'root';
  throw errors.invalidRequest(`the sandbox has no user ${user}: E2B's users are user (the default) and root`);
}

/** Connect's streaming requests (server, client or bidi) carry `application/connect+<codec>`. */
function isConnectStream(contentType: string | undefined): boolean {
  return contentType?.toLowerCase().startsWith('application/connect+') === true;
}

function answerOf(answer: E2bAnswer): HttpResponse {
  if (answer.body === undefined) return { status: answer.status, headers: { ...answer.headers }, body: '' };
  return json(answer.status, answer.body, answer.headers);
}
