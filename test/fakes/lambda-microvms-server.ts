import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import * as z from 'zod';
import { type FakeHttp, parseJson, startFakeHttp } from './fake-http.ts';

/**
 * A fake AWS Lambda MicroVMs service faithful to the published API reference (`microvm-api`, version
 * 2025-09-09), reached by the real @aws-sdk/client-lambda-microvms through its `endpoint` setting:
 * - the REST routes under /2025-09-09/microvms, restJson bodies, epoch-second timestamps, errors as
 *   `x-amzn-errortype` plus `{message}` with the documented statuses (400 validation, 403 access, 404 not
 *   found, 409 conflict, 429 throttling, 402 quota, 500 internal);
 * - SigV4 requests signed for the `lambda` service by a known access key (403 otherwise);
 * - the state machine PENDING -> RUNNING -> SUSPENDING -> SUSPENDED -> RUNNING, TERMINATING -> TERMINATED,
 *   with maximumDurationInSeconds ending a VM; `clientToken` idempotency (the same token and parameters
 *   answer the same VM, other parameters a ConflictException); ListMicrovms paged by nextToken;
 * - each VM's endpoint: a proxy on its own port that admits requests carrying a token from
 *   CreateMicrovmAuthToken (expiry and allowed ports checked), routes to `x-aws-proxy-port` (default
 *   8080), and forwards to the VM's guest agent, a host process (adapters/lambda-microvms/guest-agent.ts).
 *   Suspending a VM stops the agent's process group (SIGSTOP) and resuming continues it, so its memory and
 *   files are kept as on the service; a suspended VM with autoResumeEnabled resumes on traffic. Unlike a
 *   frozen VM, commands the agent started keep running while suspended (each runs in its own process
 *   group, as devhost starts them).
 * Not simulated: the idle timer (maxIdleDurationSeconds is at least 60 s), images and their builds, hooks.
 */
const guestAgent = resolve(import.meta.dirname, '../../adapters/lambda-microvms/guest-agent.ts');
const defaultPort = 8080;

type State = 'PENDING' | 'RUNNING' | 'SUSPENDING' | 'SUSPENDED' | 'TERMINATING' | 'TERMINATED';

interface FakeMicrovm {
  microvmId: string;
  state: State;
  endpoint: string;
  imageArn: string;
  imageVersion: string;
  executionRoleArn?: string;
  idlePolicy?: {
    maxIdleDurationSeconds: number;
    suspendedDurationSeconds: number;
    autoResumeEnabled: boolean;
  };
  maximumDurationInSeconds: number;
  startedAt: number;
  terminatedAt?: number;
  stateReason?: string;
  ingressNetworkConnectors?: string[];
  egressNetworkConnectors?: string[];
  clientToken: string;
  parameters: string;
  process?: ChildProcess;
  guestPort?: number;
  proxy?: Server;
  root?: string;
  timer?: NodeJS.Timeout;
}

const idlePolicySchema = z.object({
  maxIdleDurationSeconds: z.int().min(60),
  suspendedDurationSeconds: z.int().min(0),
  autoResumeEnabled: z.boolean(),
});
const runSchema = z.object({
  imageIdentifier: z.string().regex(/^arn:[a-z0-9-]+:lambda:[a-z0-9-]*:[a-z0-9]*:microvm-image:.+$/),
  imageVersion: z.string().regex(/^\S+$/).optional(),
  executionRoleArn: z
    .string()
    .regex(/^arn:[a-z0-9-]+:iam::\d{12}:role\/.+$/)
    .optional(),
  idlePolicy: idlePolicySchema.optional(),
  ingressNetworkConnectors: z.array(z.string()).max(10).optional(),
  egressNetworkConnectors: z.array(z.string()).max(10).optional(),
  logging: z.unknown().optional(),
  runHookPayload: z.string().max(16_384).optional(),
  maximumDurationInSeconds: z.int().min(1).max(28_800).optional(),
  clientToken: z.string().min(1).max(64).optional(),
});
const portSpecSchema = z.union([
  z.object({ port: z.int().min(1).max(65_535) }),
  z.object({ range: z.object({ startPort: z.int().min(1), endPort: z.int().max(65_535) }) }),
  z.object({ allPorts: z.object({}) }),
]);
const tokenSchema = z.object({
  expirationInMinutes: z.int().min(1).max(60),
  allowedPorts: z.array(portSpecSchema).min(1),
});
type PortSpec = z.infer<typeof portSpecSchema>;

class ServiceError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export interface LambdaMicrovmsFakeOptions {
  /** The image ARNs that exist, each with these versions (default 1.0 only; the first is the latest). */
  images: string[];
  versions?: string[];
  /** The access key id requests must be signed with. */
  accessKeyId: string;
  /** Default ListMicrovms page size. */
  pageSize?: number;
  /** How long PENDING, SUSPENDING and TERMINATING last. */
  transitionMs?: number;
  /** The program a VM runs (its image): default, the guest agent from source. */
  guest?: string[];
}

export class LambdaMicrovmsFake {
  readonly vms = new Map<string, FakeMicrovm>();
  /** An image's state (default CREATED); CREATE_FAILED gives it no active version and a FAILED build. */
  readonly imageStates = new Map<string, string>();
  readonly received: { run: unknown[]; calls: string[] } = { run: [], calls: [] };
  readonly faults = {
    down: false,
    failRun: undefined as { status: number; type: string } | undefined,
    dropRunResponse: false,
    /** The next VM's guest never starts: the VM ends with a stateReason. */
    nextVmFails: false,
    /** TerminateMicrovm answers ConflictException (as a service may for a VM already ending). */
    terminateConflict: false,
    /** The ListMicrovms page at this index (0 = first) answers 500. */
    failListPage: undefined as number | undefined,
  };
  url = '';
  readonly #options: Required<LambdaMicrovmsFakeOptions>;
  readonly #tokens = new Map<string, { microvmId: string; expiresAt: number; ports: PortSpec[] }>();
  #http: FakeHttp | undefined;
  #root = '';
  /** Guest process groups still alive: killed if the test process exits without stop(). */
  readonly #groups = new Set<number>();
  readonly #killGroups = () => {
    for (const pid of this.#groups) signalGroup({ pid }, 'SIGKILL');
  };

  constructor(options: LambdaMicrovmsFakeOptions) {
    this.#options = {
      pageSize: 50,
      transitionMs: 20,
      guest: [process.execPath, guestAgent],
      versions: ['1.0'],
      ...options,
    };
  }

  async start(): Promise<this> {
    this.#root = await mkdtemp(join(tmpdir(), 'differently-microvms-'));
    // Each VM's disk is a folder here; a root guest agent's jails run as an unprivileged user, which must
    // be able to walk through to it (a real VM's /var/lib is open the same way).
    await chmod(this.#root, 0o711);
    process.once('exit', this.#killGroups);
    this.#http = await startFakeHttp(
      (req, url, body, res) => this.#handle(req, url, body, res),
      (res, error) =>
        error instanceof ServiceError
          ? this.#error(res, error)
          : this.#error(res, new ServiceError(500, 'InternalServerException', String(error))),
    );
    this.url = this.#http.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.#http?.close();
    await Promise.all([...this.vms.values()].map((vm) => this.#end(vm, 'the fake stopped')));
    await rm(this.#root, { recursive: true, force: true });
    process.off('exit', this.#killGroups);
  }

  /** Mints a token as CreateMicrovmAuthToken would (for tests that call an endpoint themselves). */
  tokenFor(microvmId: string, minutes = 5, ports: PortSpec[] = [{ port: defaultPort }]): string {
    const token = randomBytes(24).toString('base64url');
    this.#tokens.set(token, { microvmId, expiresAt: Date.now() + minutes * 60_000, ports });
    return token;
  }

  /** The service suspends a VM as its idle policy would after maxIdleDurationSeconds of silence. */
  async idleSuspend(microvmId: string): Promise<void> {
    const vm = this.vms.get(microvmId);
    if (vm?.state !== 'RUNNING') throw new Error(`MicroVM ${microvmId} is not running`);
    // Only a VM run with an idle policy has an idle timer.
    if (vm.idlePolicy === undefined) throw new Error(`MicroVM ${microvmId} has no idle policy`);
    this.#suspend(vm);
    while ((vm.state as State) === 'SUSPENDING') await new Promise((r) => setTimeout(r, 5));
  }

  /** The VM's maximum duration runs out now (as `maximumDurationInSeconds` after its start would). */
  async reachMaximumDuration(id: string): Promise<void> {
    const vm = this.vms.get(id);
    if (vm === undefined) throw new Error(`no MicroVM ${id}`);
    clearTimeout(vm.timer);
    await this.#terminate(vm, 'maximum duration reached');
  }

  /** Every token minted so far expires now (as 60 minutes later). */
  expireTokens(): void {
    for (const token of this.#tokens.values()) token.expiresAt = 0;
  }

  /**
   * A VM someone else ran (another installation, or a create whose sandbox the store lost): its guest
   * holds `sandboxId` of `installation`. Resolves once the guest has it.
   */
  async runForeign(imageArn: string, sandboxId: string, installation: string): Promise<FakeMicrovm> {
    const vm = await this.#launch(randomBytes(16).toString('hex'), '{}', { imageIdentifier: imageArn });
    while (vm.state === 'PENDING') await new Promise((r) => setTimeout(r, 10));
    const token = this.tokenFor(vm.microvmId);
    const response = await fetch(`${vm.endpoint}/adapter/v1/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-aws-proxy-auth': token },
      body: JSON.stringify({
        id: sandboxId,
        installation,
        resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
        env: {},
        labels: {},
      }),
    });
    if (!response.ok) throw new Error(`the foreign guest refused its sandbox: ${await response.text()}`);
    return vm;
  }

  #error(res: ServerResponse, error: ServiceError): void {
    res.writeHead(error.status, { 'content-type': 'application/json', 'x-amzn-errortype': error.type });
    res.end(JSON.stringify({ message: error.message }));
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  async #handle(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void> {
    const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/[a-z0-9-]+\/lambda\/aws4_request,/.exec(
      req.headers.authorization ?? '',
    );
    if (auth === null || auth[1] !== this.#options.accessKeyId) {
      throw new ServiceError(
        403,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    }
    if (this.faults.down)
      throw new ServiceError(500, 'InternalServerException', 'Internal failure. Please try again.');
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith('/2025-09-09/microvm-images/') && method === 'GET')
      return this.#image(url, res);
    const parts = url.pathname
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent);
    if (parts[0] !== '2025-09-09' || parts[1] !== 'microvms')
      throw new ServiceError(404, 'UnknownOperationException', 'unknown route');
    const id = parts[2];
    const action = parts[3];
    this.received.calls.push(
      `${method} ${id === undefined ? '' : 'microvm'}${action === undefined ? '' : `/${action}`}`,
    );
    if (id === undefined && method === 'POST') return this.#run(body, res);
    if (id === undefined && method === 'GET') return this.#list(url, res);
    if (id === undefined) throw new ServiceError(405, 'UnknownOperationException', 'unknown route');
    const vm = this.vms.get(id);
    if (vm === undefined) throw new ServiceError(404, 'ResourceNotFoundException', `MicroVM ${id} not found`);
    if (action === undefined && method === 'GET') return this.#json(res, 200, describe(vm));
    if (action === undefined && method === 'DELETE') {
      if (this.faults.terminateConflict)
        throw new ServiceError(409, 'ConflictException', `MicroVM ${id} is ${vm.state}`);
      void this.#terminate(vm, 'TerminateMicrovm was called');
      return this.#json(res, 200, {});
    }
    if (action === 'suspend' && method === 'POST') {
      if (vm.state !== 'RUNNING')
        throw new ServiceError(409, 'ConflictException', `MicroVM ${id} is ${vm.state}, not RUNNING`);
      this.#suspend(vm);
      return this.#json(res, 200, {});
    }
    if (action === 'resume' && method === 'POST') {
      // As the service: only a SUSPENDED VM resumes; a running one is a conflict too.
      if (vm.state !== 'SUSPENDED')
        throw new ServiceError(409, 'ConflictException', `MicroVM ${id} is ${vm.state}, not SUSPENDED`);
      this.#resume(vm);
      return this.#json(res, 200, {});
    }
    if (action === 'auth-token' && method === 'POST') {
      const parsed = tokenSchema.safeParse(parseJson(body));
      if (!parsed.success)
        throw new ServiceError(
          400,
          'ValidationException',
          `1 validation error detected: ${parsed.error.issues[0]?.message}`,
        );
      if (vm.state === 'TERMINATING' || vm.state === 'TERMINATED')
        throw new ServiceError(409, 'ConflictException', `MicroVM ${id} is ${vm.state}`);
      const token = this.tokenFor(id, parsed.data.expirationInMinutes, parsed.data.allowedPorts);
      return this.#json(res, 200, { authToken: { 'X-aws-proxy-auth': token } });
    }
    throw new ServiceError(404, 'UnknownOperationException', 'unknown route');
  }

  /** GetMicrovmImage and GetMicrovmImageVersion: the images given at construction, in `imageStates`. */
  #image(url: URL, res: ServerResponse): void {
    const [, , , arn = '', versions, version] = url.pathname.split('/').map(decodeURIComponent);
    if (!this.#options.images.includes(arn))
      throw new ServiceError(404, 'ResourceNotFoundException', `MicroVM image ${arn} not found`);
    const state = this.imageStates.get(arn) ?? 'CREATED';
    if (versions === undefined) {
      this.#json(res, 200, {
        imageArn: arn,
        name: arn.split(':').at(-1),
        state,
        ...(state !== 'CREATE_FAILED' && { latestActiveImageVersion: this.#options.versions[0] }),
        createdAt: 1_780_000_000,
      });
      return;
    }
    if (versions !== 'versions' || version === undefined || !this.#options.versions.includes(version))
      throw new ServiceError(404, 'ResourceNotFoundException', `version ${version} of ${arn} not found`);
    this.#json(res, 200, {
      baseImageArn: 'arn:aws:lambda:us-east-1:aws:microvm-image:al2023-1',
      buildRoleArn: 'arn:aws:iam::123456789012:role/build',
      codeArtifact: { uri: 's3://bucket/guest.zip' },
      imageArn: arn,
      imageVersion: version,
      state: state === 'CREATE_FAILED' ? 'FAILED' : 'SUCCESSFUL',
      status: 'ACTIVE',
      createdAt: 1_780_000_000,
    });
  }

  async #run(body: Buffer, res: ServerResponse): Promise<void> {
    const raw = parseJson(body);
    this.received.run.push(raw);
    const parsed = runSchema.safeParse(raw);
    if (!parsed.success)
      throw new ServiceError(
        400,
        'ValidationException',
        `1 validation error detected: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
      );
    const input = parsed.data;
    if (this.faults.failRun !== undefined) {
      const failure = this.faults.failRun;
      this.faults.failRun = undefined;
      throw new ServiceError(failure.status, failure.type, `${failure.type} (injected)`);
    }
    if (!this.#options.images.includes(input.imageIdentifier))
      throw new ServiceError(
        404,
        'ResourceNotFoundException',
        `MicroVM image ${input.imageIdentifier} not found`,
      );
    if (input.imageVersion !== undefined && !this.#options.versions.includes(input.imageVersion))
      throw new ServiceError(
        404,
        'ResourceNotFoundException',
        `version ${input.imageVersion} of the image not found`,
      );
    const { clientToken = randomBytes(16).toString('hex'), ...rest } = input;
    const parameters = JSON.stringify(rest);
    const existing = [...this.vms.values()].find((vm) => vm.clientToken === clientToken);
    let vm: FakeMicrovm;
    if (existing !== undefined) {
      if (existing.parameters !== parameters)
        throw new ServiceError(
          409,
          'ConflictException',
          'The clientToken was used with different parameters',
        );
      vm = existing;
    } else {
      vm = await this.#launch(clientToken, parameters, input);
    }
    if (this.faults.dropRunResponse) {
      this.faults.dropRunResponse = false;
      res.destroy();
      return;
    }
    this.#json(res, 200, describe(vm));
  }

  async #launch(
    clientToken: string,
    parameters: string,
    input: z.infer<typeof runSchema>,
  ): Promise<FakeMicrovm> {
    const microvmId = `microvm-${randomBytes(9).toString('hex')}`;
    const vm: FakeMicrovm = {
      microvmId,
      state: 'PENDING',
      endpoint: '',
      imageArn: input.imageIdentifier,
      imageVersion: input.imageVersion ?? this.#options.versions[0] ?? '1.0',
      ...(input.executionRoleArn !== undefined && { executionRoleArn: input.executionRoleArn }),
      ...(input.idlePolicy !== undefined && { idlePolicy: input.idlePolicy }),
      ...(input.ingressNetworkConnectors !== undefined && {
        ingressNetworkConnectors: input.ingressNetworkConnectors,
      }),
      ...(input.egressNetworkConnectors !== undefined && {
        egressNetworkConnectors: input.egressNetworkConnectors,
      }),
      maximumDurationInSeconds: input.maximumDurationInSeconds ?? 28_800,
      startedAt: Date.now() / 1000,
      clientToken,
      parameters,
    };
    this.vms.set(microvmId, vm);
    vm.proxy = await this.#startProxy(vm);
    vm.endpoint = `http://127.0.0.1:${(vm.proxy.address() as AddressInfo).port}`;
    vm.timer = setTimeout(
      () => void this.#terminate(vm, 'maximum duration reached'),
      vm.maximumDurationInSeconds * 1000,
    );
    vm.timer.unref();
    if (this.faults.nextVmFails) {
      this.faults.nextVmFails = false;
      setTimeout(
        () => void this.#end(vm, 'the run hook failed: the application did not start'),
        this.#options.transitionMs,
      );
      return vm;
    }
    void this.#boot(vm);
    return vm;
  }

  /** Starts the guest agent as a host process; the VM is RUNNING once it listens. */
  async #boot(vm: FakeMicrovm): Promise<void> {
    vm.root = join(this.#root, vm.microvmId);
    const [program = process.execPath, ...args] = this.#options.guest;
    const child = spawn(program, [...args, '--port', '0', '--host', '127.0.0.1', '--root', vm.root], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      // Its own process group: suspending stops the agent and every command it runs, as freezing a VM does.
      detached: true,
    });
    const pid = child.pid;
    if (pid !== undefined) this.#groups.add(pid);
    vm.process = child;
    if (process.env.DEBUG_MICROVMS) child.stderr?.pipe(process.stderr);
    else child.stderr?.resume();
    child.on('exit', () => {
      if (vm.state !== 'TERMINATING' && vm.state !== 'TERMINATED')
        void this.#end(vm, 'the application exited');
    });
    for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
      const match = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (match !== null) {
        vm.guestPort = Number(match[1]);
        if (vm.state === 'PENDING') vm.state = 'RUNNING';
        break;
      }
    }
    child.stdout?.resume();
  }

  #suspend(vm: FakeMicrovm): void {
    vm.state = 'SUSPENDING';
    setTimeout(() => {
      if (vm.state !== 'SUSPENDING') return;
      signalGroup(vm.process, 'SIGSTOP');
      vm.state = 'SUSPENDED';
    }, this.#options.transitionMs);
  }

  #resume(vm: FakeMicrovm): void {
    signalGroup(vm.process, 'SIGCONT');
    vm.state = 'RUNNING';
  }

  async #terminate(vm: FakeMicrovm, reason: string): Promise<void> {
    if (vm.state === 'TERMINATING' || vm.state === 'TERMINATED') return;
    vm.state = 'TERMINATING';
    vm.stateReason = reason;
    await new Promise((r) => setTimeout(r, this.#options.transitionMs));
    await this.#end(vm, reason);
  }

  async #end(vm: FakeMicrovm, reason: string): Promise<void> {
    if (vm.state === 'TERMINATED') return;
    clearTimeout(vm.timer);
    vm.state = 'TERMINATED';
    vm.terminatedAt = Date.now() / 1000;
    vm.stateReason = reason;
    const child = vm.process;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      signalGroup(child, 'SIGCONT');
      signalGroup(child, 'SIGKILL');
      await exited;
    }
    if (child?.pid !== undefined) this.#groups.delete(child.pid);
    if (vm.proxy !== undefined) {
      vm.proxy.closeAllConnections();
      await new Promise((r) => vm.proxy?.close(r));
    }
    if (vm.root !== undefined) await rm(vm.root, { recursive: true, force: true });
  }

  #list(url: URL, res: ServerResponse): void {
    const maxResults = url.searchParams.has('maxResults')
      ? Number(url.searchParams.get('maxResults'))
      : this.#options.pageSize;
    if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 100)
      throw new ServiceError(400, 'ValidationException', 'maxResults must be between 1 and 100');
    const token = url.searchParams.get('nextToken');
    const offset = token === null ? 0 : Number(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Number.isInteger(offset) || offset < 0)
      throw new ServiceError(400, 'ValidationException', 'Invalid nextToken');
    if (this.faults.failListPage !== undefined && offset >= this.faults.failListPage * maxResults) {
      this.faults.failListPage = undefined;
      throw new ServiceError(500, 'InternalServerException', 'Internal failure. Please try again.');
    }
    const image = url.searchParams.get('imageIdentifier');
    const version = url.searchParams.get('imageVersion');
    const all = [...this.vms.values()].filter(
      (vm) => (image === null || vm.imageArn === image) && (version === null || vm.imageVersion === version),
    );
    const page = all.slice(offset, offset + maxResults);
    const next =
      offset + maxResults < all.length
        ? Buffer.from(String(offset + maxResults)).toString('base64url')
        : undefined;
    this.#json(res, 200, {
      items: page.map((vm) => ({
        microvmId: vm.microvmId,
        state: vm.state,
        imageArn: vm.imageArn,
        imageVersion: vm.imageVersion,
        startedAt: vm.startedAt,
      })),
      ...(next !== undefined && { nextToken: next }),
    });
  }

  /** The VM's endpoint: auth token, port routing, auto-resume, then the guest agent. */
  async #startProxy(vm: FakeMicrovm): Promise<Server> {
    const server = createServer((req, res) => {
      const refuse = (status: number, message: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message }));
      };
      const token = this.#tokens.get(String(req.headers['x-aws-proxy-auth'] ?? ''));
      if (token === undefined || token.microvmId !== vm.microvmId || token.expiresAt < Date.now())
        return refuse(403, 'Forbidden');
      const port = Number(req.headers['x-aws-proxy-port'] ?? defaultPort);
      if (!token.ports.some((spec) => allows(spec, port))) return refuse(403, 'Forbidden');
      if (vm.state === 'SUSPENDED' && vm.idlePolicy?.autoResumeEnabled === true) this.#resume(vm);
      if (vm.state !== 'RUNNING' || vm.guestPort === undefined) return refuse(502, `MicroVM is ${vm.state}`);
      // Only the guest agent listens inside; it stands for the application port.
      if (port !== defaultPort) return refuse(502, `nothing listens on port ${port}`);
      const headers = { ...req.headers };
      delete headers['x-aws-proxy-auth'];
      delete headers['x-aws-proxy-port'];
      const upstream = httpRequest(
        { host: '127.0.0.1', port: vm.guestPort, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () =>
        res.headersSent ? res.destroy() : refuse(502, 'the application did not answer'),
      );
      // A caller who leaves (a detached attach) closes the connection through to the application.
      res.on('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return server;
  }
}

function signalGroup(child: { pid?: number | undefined } | undefined, signal: NodeJS.Signals): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function allows(spec: PortSpec, port: number): boolean {
  if ('port' in spec) return spec.port === port;
  if ('range' in spec) return port >= spec.range.startPort && port <= spec.range.endPort;
  return true;
}

function describe(vm: FakeMicrovm): Record<string, unknown> {
  return {
    microvmId: vm.microvmId,
    state: vm.state,
    endpoint: vm.endpoint,
    imageArn: vm.imageArn,
    imageVersion: vm.imageVersion,
    ...(vm.executionRoleArn !== undefined && { executionRoleArn: vm.executionRoleArn }),
    ...(vm.idlePolicy !== undefined && { idlePolicy: vm.idlePolicy }),
    maximumDurationInSeconds: vm.maximumDurationInSeconds,
    startedAt: vm.startedAt,
    ...(vm.terminatedAt !== undefined && { terminatedAt: vm.terminatedAt }),
    ...(vm.stateReason !== undefined && { stateReason: vm.stateReason }),
    ...(vm.ingressNetworkConnectors !== undefined && {
      ingressNetworkConnectors: vm.ingressNetworkConnectors,
    }),
    ...(vm.egressNetworkConnectors !== undefined && { egressNetworkConnectors: vm.egressNetworkConnectors }),
  };
}
