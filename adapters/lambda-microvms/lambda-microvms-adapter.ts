/**
 * Lambda MicroVMs (the `lambda-microvms` API, 2025-09-09): one Firecracker microVM per sandbox, in the
 * operator's own AWS account, through the official SDK client. The VM runs the guest agent
 * (./guest-agent.ts), reached at the VM's endpoint with a token from CreateMicrovmAuthToken; exec, streamed
 * exec, interactive processes and files go to it over the adapter HTTP protocol (the remote adapter is the
 * client).
 *
 * What the API does not offer, and how this adapter stands in for it (docs/providers.md):
 * - MicroVMs take no tags (TagResource covers images, not VMs) and ListMicrovms filters by image only. The
 *   sandbox id is the RunMicrovm clientToken (a retried create finds its VM) and the guest agent keeps the
 *   sandbox id and installation; List asks each running VM's guest. A VM that cannot be asked (pending,
 *   suspended, a guest that does not answer) is listed unnamed (`sandboxId: ''`): the reconciler matches it
 *   by ref and never deletes it on a guess.
 * - The lifetime (maximumDurationInSeconds) is fixed at RunMicrovm: extending a sandbox's TTL does not
 *   move it (the seeds' E0.20), and no VM outlives 8 hours.
 */
import {
  CreateMicrovmAuthTokenCommand,
  GetMicrovmCommand,
  GetMicrovmImageCommand,
  type GetMicrovmImageOutput,
  GetMicrovmImageVersionCommand,
  type GetMicrovmResponse,
  LambdaMicrovmsClient,
  ListMicrovmsCommand,
  type MicrovmItem,
  type MicrovmState,
  ResumeMicrovmCommand,
  RunMicrovmCommand,
  SuspendMicrovmCommand,
  TerminateMicrovmCommand,
} from '@aws-sdk/client-lambda-microvms';
import { unboundedCapacity } from '../../lib/adapter/capacity.ts';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import {
  type AdapterInfo,
  adapterProtocolVersion,
  type CallOptions,
  type Capabilities,
  type Capacity,
  type CreateRequest,
  type ExecEmit,
  type ExecOptions,
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type IdleKeeper,
  type IdleRequest,
  type Instance,
  type InstanceState,
  type Pauser,
  type ReadFileOptions,
  type Streamer,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { isApiError } from '../../lib/errors.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import { sleep } from '../httpx/sleep.ts';
import { RemoteAdapter } from '../remote/remote-adapter.ts';
import { type LambdaMicrovmsConfig, maxMicrovmSeconds } from './config.ts';
import { guestRef } from './guest.ts';

/** The header the VM's endpoint reads its auth token from, and the one that picks the port inside. */
export const proxyAuthHeader = 'x-aws-proxy-auth';
export const proxyPortHeader = 'x-aws-proxy-port';
/** Tokens are minted for this long (the service allows 60 min) and replaced a minute before they end. */
const tokenMinutes = 15;
/** Image states in which no VM can be run from it. */
const goneImageStates = new Set(['CREATING', 'CREATE_FAILED', 'DELETING', 'DELETED', 'DELETE_FAILED']);
/** How many guests List asks at once. */
const listConcurrency = 8;

export const lambdaMicrovmsFeatures = [
  'exec',
  'exec.stream',
  'exec.stdin',
  'exec.pty',
  'files',
  'lifecycle.pause-resume',
  'isolation.microvm',
  'arch.arm64',
];

/** The service answers the endpoint as a host name (`<id>.lambda-microvm.<region>.on.aws`): HTTPS. */
export function endpointUrl(endpoint: string): string {
  return /^https?:\/\//.test(endpoint) ? endpoint : `https://${endpoint}`;
}

export function microvmStateOf(state: MicrovmState | string | undefined): InstanceState | 'gone' {
  switch (state) {
    case 'RUNNING':
      return 'running';
    case 'SUSPENDING':
    case 'SUSPENDED':
      return 'paused';
    case 'TERMINATING':
    case 'TERMINATED':
      return 'gone';
    default:
      return 'pending';
  }
}

/**
 * An SDK error as the contract's code, by what the service answered: throttling and quotas are capacity,
 * validation is the request's fault, access and outages are the pool's.
 */
export function classifyMicrovmError(error: unknown, what: string, ref?: string): Error {
  if (isApiError(error)) return error;
  const name = (error as { name?: unknown }).name;
  const message = (error as { message?: unknown }).message;
  const said = typeof message === 'string' && message !== '' ? `: ${message}` : '';
  switch (name) {
    case 'ResourceNotFoundException':
      return ref === undefined
        ? adapterErrors.invalidRequest(`Lambda MicroVMs ${what}: a resource was not found${said}`)
        : adapterErrors.notFound(ref);
    case 'ThrottlingException':
    case 'TooManyRequestsException':
    case 'ServiceQuotaExceededException':
    case 'InsufficientCapacityException':
      return adapterErrors.insufficientCapacity(`Lambda MicroVMs ${what}: ${name}${said}`, { reason: name });
    case 'ValidationException':
    case 'InvalidParameterValueException':
      return adapterErrors.invalidRequest(`Lambda MicroVMs ${what}: ${name}${said}`);
    case 'ConflictException':
    case 'ResourceConflictException':
      return adapterErrors.invalidState(`Lambda MicroVMs ${what}: ${name}${said}`);
    default:
      // AccessDenied, unrecognised credentials, 5xx, the network: the pool cannot be used right now.
      return adapterErrors.unavailable(
        `Lambda MicroVMs ${what} failed: ${typeof name === 'string' ? name : 'error'}${said}`,
        {},
        { cause: error },
      );
  }
}

interface Token {
  value: string;
  /** Epoch ms after which it is minted again. */
  renewAt: number;
}

export interface LambdaMicrovmsDeps {
  /** A client of the service (tests pass one with their own endpoint and credentials). */
  client?: LambdaMicrovmsClient;
  fetch?: typeof fetch;
}

export class LambdaMicrovmsAdapter
  implements ExecutionAdapter, Streamer, FileSystem, Pauser, IdleKeeper, ProcessHost
{
  readonly #config: LambdaMicrovmsConfig;
  readonly #client: LambdaMicrovmsClient;
  readonly #fetch: typeof fetch;
  /**
   * Per-container caches, each harmless when stale: a VM's endpoint never changes in its life, and a token
   * the endpoint refuses (expired, revoked) is minted again on the spot.
   */
  readonly #endpoints = new Map<string, string>();
  readonly #tokens = new Map<string, Token>();

  constructor(config: LambdaMicrovmsConfig, deps: LambdaMicrovmsDeps = {}) {
    this.#config = config;
    this.#client =
      deps.client ??
      new LambdaMicrovmsClient({
        ...(config.region !== undefined && { region: config.region }),
        ...(config.endpoint !== undefined && { endpoint: config.endpoint }),
      });
    this.#fetch = deps.fetch ?? fetch;
  }

  info(): AdapterInfo {
    return {
      kind: 'lambda-microvms',
      version: '2025-09-09',
      trust: 'private',
      isolation:
        "microvm: one Firecracker microVM per sandbox (AWS Lambda MicroVMs), in the operator's account",
      protocol: adapterProtocolVersion,
      isolationVerified: false,
      description:
        'exec, interactive processes and files reach the guest agent the image runs, through the VM endpoint',
      limitations: [
        "isolation is the service's claim (one Firecracker microVM per sandbox); nothing here probes it",
        'verified in CI against a fake of the service built from its API reference; against the real service only by the live conformance run (DIFFERENTLY_LIVE_LAMBDA_MICROVMS)',
        "resources are the image's (an image is single-size): requested cpu and memory are checked against it, not applied",
        `the lifetime is fixed when the VM starts (maximumDurationInSeconds, at most ${maxMicrovmSeconds / 3600} h): extending a sandbox's TTL does not move it`,
        'MicroVMs carry no tags: ownership is the RunMicrovm clientToken (the sandbox id) and what the guest agent holds; a suspended VM is listed without its sandbox id and matched by its ref',
        'no stop-start, snapshots, fork or exposed ports',
        "a sandbox's idle policy that pauses after 60 s to 8 h is kept by the service's own idle policy (the control plane follows the suspension and resumes on the next call, marking long commands as traffic); any other is enforced by the control plane",
        ...(this.#config.idlePolicy === undefined
          ? []
          : [
              `idle VMs of sandboxes without an idle policy of their own are suspended by the service after ${this.#config.idlePolicy.maxIdleDurationSeconds} s without endpoint traffic and ended ${this.#config.idlePolicy.suspendedDurationSeconds} s later`,
              // The service counts requests arriving, not bytes: a streamed exec's open response is no traffic.
              `a command that runs longer than ${this.#config.idlePolicy.maxIdleDurationSeconds} s with no other call to the sandbox is suspended mid-run (its stream then stops until something resumes the VM): keep long jobs on a pool without an idle policy, or call the sandbox meanwhile; an attached interactive process counts only its inputs as traffic`,
            ]),
      ],
    };
  }

  async capabilities(): Promise<Capabilities> {
    return {
      features: lambdaMicrovmsFeatures,
      maxCPU: this.#config.vcpus,
      maxMemoryMiB: this.#config.memoryMiB,
      maxDiskGiB: 0,
      templates: [],
      regions: this.#config.region === undefined ? [] : [this.#config.region],
    };
  }

  async capacity(): Promise<Capacity> {
    // Service quotas bound the account, not a number the API reports: the pool's maxConcurrency governs.
    return unboundedCapacity();
  }

  /**
   * The pool can take work when its image can run: the image exists and is not being deleted, and has a
   * built version (the configured one, or an active one). A wrong ARN or a failed build makes the pool
   * unhealthy at once, instead of failing every sandbox placed on it.
   */
  async health(opts?: CallOptions): Promise<void> {
    const { image, imageVersion } = this.#config;
    const unusable = (why: string) =>
      adapterErrors.unavailable(`the MicroVM image ${image} ${why}`, { image });
    let found: GetMicrovmImageOutput;
    try {
      found = await this.#client.send(new GetMicrovmImageCommand({ imageIdentifier: image }), {
        abortSignal: opts?.signal,
      });
    } catch (error) {
      if ((error as { name?: unknown }).name === 'ResourceNotFoundException')
        throw unusable('does not exist');
      throw classifyMicrovmError(error, 'GetMicrovmImage');
    }
    if (found.state === undefined || goneImageStates.has(found.state)) throw unusable(`is ${found.state}`);
    if (imageVersion === undefined) {
      if (found.latestActiveImageVersion === undefined)
        throw unusable('has no active version (is its build done?)');
      return;
    }
    const version = await this.#send('GetMicrovmImageVersion', undefined, opts, () =>
      this.#client.send(new GetMicrovmImageVersionCommand({ imageIdentifier: image, imageVersion }), {
        abortSignal: opts?.signal,
      }),
    ).catch((error: unknown) => {
      throw isApiError(error) && error.code === 'invalid_request'
        ? unusable(`has no version ${imageVersion}`)
        : error;
    });
    if (version.state !== 'SUCCESSFUL')
      throw unusable(
        `version ${imageVersion} is ${version.state}${version.stateReason ? `: ${version.stateReason}` : ''}`,
      );
  }

  async create(req: CreateRequest, opts?: CallOptions): Promise<Instance> {
    const lifetime = Math.min(req.ttlSeconds ?? maxMicrovmSeconds, maxMicrovmSeconds);
    const run = await this.#send('RunMicrovm', undefined, opts, () =>
      this.#client.send(
        new RunMicrovmCommand({
          // The sandbox id as the idempotency token: a create retried after a lost answer finds its VM.
          clientToken: req.id,
          imageIdentifier: this.#config.image,
          imageVersion: this.#config.imageVersion,
          executionRoleArn: this.#config.executionRoleArn,
          idlePolicy: idlePolicyFor(req, this.#config.idlePolicy, lifetime),
          ingressNetworkConnectors: this.#config.ingressNetworkConnectors,
          egressNetworkConnectors: this.#config.egressNetworkConnectors,
          maximumDurationInSeconds: Math.max(1, lifetime),
        }),
        { abortSignal: opts?.signal },
      ),
    );
    const id = run.microvmId;
    if (id === undefined)
      throw adapterErrors.unavailable('Lambda MicroVMs RunMicrovm answered without a microvmId');
    if (run.endpoint !== undefined && run.endpoint !== '') this.#endpoints.set(id, endpointUrl(run.endpoint));
    const guest = await this.#untilGuestAnswers(id, opts);
    // The guest keeps the sandbox id and installation: what List reads back (VMs take no tags).
    await guest.create(req, opts);
    return { ref: id, sandboxId: req.id, state: 'running' };
  }

  async get(ref: string, opts?: CallOptions): Promise<Instance> {
    const vm = await this.#describe(ref, opts);
    const state = microvmStateOf(vm.state);
    if (state === 'gone') throw adapterErrors.notFound(ref);
    return { ref, sandboxId: '', state };
  }

  /** Every VM of the pool's image this installation holds: all pages, or a rejection. */
  async list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    const vms: MicrovmItem[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.#send('ListMicrovms', undefined, opts, () =>
        this.#client.send(
          // Every version of the image: a pool moved to a new version still holds its older VMs.
          new ListMicrovmsCommand({
            imageIdentifier: this.#config.image,
            ...(nextToken !== undefined && { nextToken }),
          }),
          { abortSignal: opts?.signal },
        ),
      );
      vms.push(...(page.items ?? []));
      nextToken = page.nextToken ?? undefined;
    } while (nextToken !== undefined);

    const live = vms.filter((vm) => vm.microvmId !== undefined && microvmStateOf(vm.state) !== 'gone');
    const out: (Instance | undefined)[] = new Array(live.length);
    let next = 0;
    const worker = async () => {
      while (next < live.length) {
        const index = next++;
        out[index] = await this.#owned(live[index] as MicrovmItem, installation, opts);
      }
    };
    await Promise.all(Array.from({ length: Math.min(listConcurrency, live.length) }, worker));
    return out.filter((instance): instance is Instance => instance !== undefined);
  }

  /**
   * One VM as this installation's instance: named by its guest when it is running and answers, left out
   * when its guest holds another installation's sandbox (or none yet), unnamed when it cannot be asked.
   */
  async #owned(vm: MicrovmItem, installation: string, opts?: CallOptions): Promise<Instance | undefined> {
    const ref = vm.microvmId as string;
    const state = microvmStateOf(vm.state) as InstanceState;
    if (state !== 'running') return { ref, sandboxId: '', state };
    try {
      const held = await (await this.#guest(ref, opts)).list(installation, opts);
      const mine = held[0];
      return mine === undefined ? undefined : { ref, sandboxId: mine.sandboxId, state };
    } catch {
      return { ref, sandboxId: '', state, message: 'the guest agent did not answer' };
    }
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    try {
      await this.#send('TerminateMicrovm', ref, opts, () =>
        this.#client.send(new TerminateMicrovmCommand({ microvmIdentifier: ref }), {
          abortSignal: opts?.signal,
        }),
      );
    } catch (error) {
      // Missing, or refused because it is already ending (and it has): what was asked for.
      const done =
        isApiError(error) &&
        (error.code === 'not_found' ||
          (error.code === 'invalid_state' && (await this.#stateNow(ref, opts)) === 'gone'));
      if (!done) throw error;
    }
    this.#endpoints.delete(ref);
    this.#tokens.delete(ref);
  }

  async exec(ref: string, req: ExecRequest, opts?: ExecOptions): Promise<ExecResult> {
    return this.#onGuest(ref, opts, (guest) => guest.exec(guestRef, req, opts));
  }

  async execStream(ref: string, req: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number> {
    return this.#onGuest(ref, opts, (guest) => guest.execStream(guestRef, req, emit, opts));
  }

  async readFile(ref: string, path: string, opts?: ReadFileOptions): Promise<Uint8Array> {
    return this.#onGuest(ref, opts, (guest) => guest.readFile(guestRef, path, opts));
  }

  async writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void> {
    return this.#onGuest(ref, opts, (guest) => guest.writeFile(guestRef, path, content, opts));
  }

  async listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]> {
    return this.#onGuest(ref, opts, (guest) => guest.listFiles(guestRef, path, opts));
  }

  // Interactive processes run in the guest agent (it holds them for the VM's life), so any container of
  // the control plane reaches the same one through the VM's endpoint.
  async startProcess(ref: string, request: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo> {
    return this.#onGuest(ref, opts, (guest) => guest.startProcess(guestRef, request, opts));
  }

  async listProcesses(ref: string, opts?: CallOptions): Promise<ProcessInfo[]> {
    return this.#onGuest(ref, opts, (guest) => guest.listProcesses(guestRef, opts));
  }

  async attachProcess(
    ref: string,
    pid: number,
    emit: ExecEmit,
    opts?: CallOptions,
  ): Promise<number | undefined> {
    return this.#onGuest(ref, opts, (guest) => guest.attachProcess(guestRef, pid, emit, opts));
  }

  async readProcessOutput(
    ref: string,
    pid: number,
    maxBytes: number,
    opts?: CallOptions,
  ): Promise<ProcessOutput> {
    return this.#onGuest(ref, opts, (guest) => guest.readProcessOutput(guestRef, pid, maxBytes, opts));
  }

  async writeStdin(ref: string, pid: number, data: Uint8Array, opts?: CallOptions): Promise<void> {
    return this.#onGuest(ref, opts, (guest) => guest.writeStdin(guestRef, pid, data, opts));
  }

  async closeStdin(ref: string, pid: number, opts?: CallOptions): Promise<void> {
    return this.#onGuest(ref, opts, (guest) => guest.closeStdin(guestRef, pid, opts));
  }

  async resizeProcess(ref: string, pid: number, size: TerminalSize, opts?: CallOptions): Promise<void> {
    return this.#onGuest(ref, opts, (guest) => guest.resizeProcess(guestRef, pid, size, opts));
  }

  async signalProcess(ref: string, pid: number, signal: ProcessSignal, opts?: CallOptions): Promise<void> {
    return this.#onGuest(ref, opts, (guest) => guest.signalProcess(guestRef, pid, signal, opts));
  }

  /**
   * One call to a running sandbox's guest. When the guest cannot be reached, the VM says why: ended (the
   * instance is gone), or suspended by the pool's idle policy while the control plane holds the sandbox
   * running. Then the VM is resumed and the call made once more: the request never reached the guest, so
   * nothing runs twice (a stream in progress counts as traffic, so no VM is suspended under one).
   */
  async #onGuest<T>(
    ref: string,
    opts: CallOptions | undefined,
    call: (guest: RemoteAdapter) => Promise<T>,
  ): Promise<T> {
    try {
      return await call(await this.#guest(ref, opts));
    } catch (error) {
      if (!isApiError(error) || error.code !== 'provider_unavailable' || opts?.signal?.aborted === true)
        throw error;
      const state = await this.#stateNow(ref, opts);
      if (state === 'gone') throw adapterErrors.notFound(ref);
      if (state !== 'paused') throw error;
      await this.#untilSuspended(ref, opts);
      await this.resume(ref, opts);
      return call(await this.#guest(ref, opts));
    }
  }

  /** The service's idle policy suspends (a pause: memory kept) after 60 s to 8 hours without a request. */
  keepsIdle(idle: IdleRequest): boolean {
    return idle.action === 'pause' && idle.afterSeconds >= 60 && idle.afterSeconds <= maxMicrovmSeconds;
  }

  /** A request to the guest agent: inbound traffic is what the service's idle timer counts. */
  async markActive(ref: string, opts?: CallOptions): Promise<void> {
    await (await this.#guest(ref, opts)).health(opts);
  }

  /** SuspendMicrovm, then wait for SUSPENDED: memory, files and processes are kept. */
  async pause(ref: string, opts?: CallOptions): Promise<void> {
    await this.#alreadyThere(ref, 'paused', opts, () =>
      this.#send('SuspendMicrovm', ref, opts, () =>
        this.#client.send(new SuspendMicrovmCommand({ microvmIdentifier: ref }), {
          abortSignal: opts?.signal,
        }),
      ),
    );
    await this.#untilSuspended(ref, opts);
  }

  async resume(ref: string, opts?: CallOptions): Promise<void> {
    await this.#alreadyThere(ref, 'running', opts, () =>
      this.#send('ResumeMicrovm', ref, opts, () =>
        this.#client.send(new ResumeMicrovmCommand({ microvmIdentifier: ref }), {
          abortSignal: opts?.signal,
        }),
      ),
    );
    await this.#untilGuestAnswers(ref, opts);
  }

  /**
   * The service refuses a suspend of a VM that is not RUNNING and a resume of one that is not SUSPENDED
   * (ConflictException, invalid_state here). A repeated call (the operations worker retries one whose
   * answer was lost) finds the VM where it was asked to go: that is done, not refused.
   */
  async #alreadyThere(
    ref: string,
    wanted: InstanceState,
    opts: CallOptions | undefined,
    call: () => Promise<unknown>,
  ) {
    try {
      await call();
    } catch (error) {
      if (!isApiError(error) || error.code !== 'invalid_state') throw error;
      if ((await this.#stateNow(ref, opts)) !== wanted) throw error;
    }
  }

  async #describe(ref: string, opts?: CallOptions): Promise<GetMicrovmResponse> {
    const vm = await this.#send('GetMicrovm', ref, opts, () =>
      this.#client.send(new GetMicrovmCommand({ microvmIdentifier: ref }), { abortSignal: opts?.signal }),
    );
    if (vm.endpoint !== undefined && vm.endpoint !== '') this.#endpoints.set(ref, endpointUrl(vm.endpoint));
    return vm;
  }

  /** The VM's state as the contract names it; a VM the service no longer knows is gone. */
  async #stateNow(ref: string, opts?: CallOptions): Promise<InstanceState | 'gone'> {
    try {
      return microvmStateOf((await this.#describe(ref, opts)).state);
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') return 'gone';
      throw error;
    }
  }

  /** Polls GetMicrovm until the VM is SUSPENDED; one that ends instead, or takes too long, has failed. */
  async #untilSuspended(ref: string, opts?: CallOptions): Promise<void> {
    const deadline = Math.min(
      Date.now() + this.#config.readyTimeoutSeconds * 1000,
      opts?.deadline ?? Number.POSITIVE_INFINITY,
    );
    for (;;) {
      const vm = await this.#describe(ref, opts);
      if (vm.state === 'SUSPENDED') return;
      if (microvmStateOf(vm.state) === 'gone') {
        throw adapterErrors.sandboxFailed(
          `MicroVM ${ref} ended (${vm.state}) before it was suspended${vm.stateReason ? `: ${vm.stateReason}` : ''}`,
          { ref, state: vm.state },
        );
      }
      if (Date.now() + this.#config.pollIntervalMs > deadline) {
        throw adapterErrors.sandboxFailed(
          `MicroVM ${ref} was still ${vm.state} when its wait to be suspended ended`,
          {
            ref,
            state: vm.state,
          },
        );
      }
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
  }

  /**
   * Readiness as the service documents it: GetMicrovm's state may lag, so a VM is ready when its guest
   * answers through the endpoint. A VM that ends meanwhile failed to start.
   */
  async #untilGuestAnswers(ref: string, opts?: CallOptions): Promise<RemoteAdapter> {
    const deadline = Math.min(
      Date.now() + this.#config.readyTimeoutSeconds * 1000,
      opts?.deadline ?? Number.POSITIVE_INFINITY,
    );
    for (;;) {
      const vm = await this.#describe(ref, opts);
      if (microvmStateOf(vm.state) === 'gone') {
        throw adapterErrors.sandboxFailed(
          `MicroVM ${ref} ended (${vm.state}) before its guest agent answered${vm.stateReason ? `: ${vm.stateReason}` : ''}`,
          { ref, state: vm.state },
        );
      }
      let failure: unknown;
      try {
        const guest = await this.#guest(ref, opts);
        await guest.health(opts);
        return guest;
      } catch (error) {
        failure = error;
      }
      if (Date.now() + this.#config.pollIntervalMs > deadline) {
        throw adapterErrors.sandboxFailed(
          `the guest agent of MicroVM ${ref} did not answer (the VM is ${vm.state}): ${(failure as Error).message}`,
          { ref, state: vm.state },
        );
      }
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
  }

  /** A protocol client for the VM's guest agent: its endpoint, with a current auth token on every request. */
  async #guest(ref: string, opts?: CallOptions): Promise<RemoteAdapter> {
    let endpoint = this.#endpoints.get(ref);
    if (endpoint === undefined) {
      const vm = await this.#describe(ref, opts);
      if (microvmStateOf(vm.state) === 'gone') throw adapterErrors.notFound(ref);
      endpoint = this.#endpoints.get(ref);
    }
    if (endpoint === undefined || endpoint === '')
      throw adapterErrors.unavailable(`MicroVM ${ref} has no endpoint yet`, { ref });
    const withToken: typeof fetch = async (input, init) => {
      const attempt = async (fresh: boolean) => {
        const headers = new Headers(init?.headers);
        headers.set(proxyAuthHeader, await this.#token(ref, fresh, opts));
        headers.set(proxyPortHeader, String(this.#config.guestPort));
        return this.#fetch(input, { ...init, headers });
      };
      const response = await attempt(false);
      // The endpoint refused the token (expired, or minted by another container before a restart).
      if (response.status !== 401 && response.status !== 403) return response;
      if (init?.body instanceof ReadableStream) return response;
      await response.body?.cancel();
      return attempt(true);
    };
    return new RemoteAdapter(
      { endpoint, timeoutSeconds: this.#config.guestTimeoutSeconds },
      undefined,
      withToken,
    );
  }

  async #token(ref: string, fresh: boolean, opts?: CallOptions): Promise<string> {
    const cached = this.#tokens.get(ref);
    if (!fresh && cached !== undefined && cached.renewAt > Date.now()) return cached.value;
    const answer = await this.#send('CreateMicrovmAuthToken', ref, opts, () =>
      this.#client.send(
        new CreateMicrovmAuthTokenCommand({
          microvmIdentifier: ref,
          expirationInMinutes: tokenMinutes,
          allowedPorts: [{ port: this.#config.guestPort }],
        }),
        { abortSignal: opts?.signal },
      ),
    );
    const value = Object.entries(answer.authToken ?? {}).find(
      ([key]) => key.toLowerCase() === proxyAuthHeader,
    )?.[1];
    if (value === undefined)
      throw adapterErrors.unavailable(
        `Lambda MicroVMs CreateMicrovmAuthToken answered without an ${proxyAuthHeader} token`,
      );
    this.#tokens.set(ref, { value, renewAt: Date.now() + (tokenMinutes - 1) * 60_000 });
    return value;
  }

  /** One SDK call, its failure classified (the ref, when given, turns not-found into the instance's). */
  async #send<T>(
    what: string,
    ref: string | undefined,
    opts: CallOptions | undefined,
    call: () => Promise<T>,
  ): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (opts?.signal?.aborted === true)
        throw adapterErrors.unavailable(`Lambda MicroVMs ${what}: cancelled`);
      throw classifyMicrovmError(error, what, ref);
    }
  }
}

/**
 * A sandbox's own idle policy (sent when keepsIdle said yes) over the pool's: suspended for as long as the
 * VM may live, so the service never ends an idle sandbox before its TTL, and resumed only through the
 * control plane, which records every move (a request to a suspended VM is refused until then).
 */
function idlePolicyFor(
  req: CreateRequest,
  pool: LambdaMicrovmsConfig['idlePolicy'],
  lifetimeSeconds: number,
): LambdaMicrovmsConfig['idlePolicy'] {
  if (req.idle === undefined) return pool;
  return {
    maxIdleDurationSeconds: req.idle.afterSeconds,
    suspendedDurationSeconds: lifetimeSeconds,
    autoResumeEnabled: false,
  };
}
