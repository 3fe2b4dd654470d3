/**
 * What runs inside each Lambda MicroVM: the devhost adapter, holding the one sandbox of its VM. The
 * control plane reaches it over the adapter HTTP protocol through the VM's endpoint, so the wire format is
 * the one the remote adapter already speaks and the conformance suite already checks.
 *
 * A VM holds exactly one sandbox, so every instance ref names it: the control plane addresses the guest by
 * the VM (its endpoint), never by a ref it would have to remember beside the VM's id.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import type {
  AdapterInfo,
  CallOptions,
  Capabilities,
  Capacity,
  CreateRequest,
  ExecEmit,
  ExecOptions,
  ExecutionAdapter,
  FileInfo,
  FileSystem,
  Instance,
  ReadFileOptions,
  Streamer,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { safeParseJsonText } from '../../lib/json-text.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import * as z from '../../lib/zod.ts';
import type { DevhostAdapter } from '../devhost/devhost-adapter.ts';

/** What the control plane's lambda-microvms adapter reaches the guest for. */
const guestFeatures = ['exec', 'exec.stream', 'exec.stdin', 'exec.pty', 'files'];

/** The ref the control plane sends for the VM's one sandbox (any ref names it; this one is conventional). */
export const guestRef = 'vm';

const ownerSchema = z.object({ sandboxId: z.string(), installation: z.string() });
type Owner = z.infer<typeof ownerSchema>;

export class OneSandboxGuest implements ExecutionAdapter, Streamer, FileSystem, ProcessHost {
  readonly #host: DevhostAdapter;
  readonly #ownerFile: string;
  #owner: Owner | undefined;

  constructor(host: DevhostAdapter, root: string) {
    this.#host = host;
    this.#ownerFile = join(root, 'owner.json');
  }

  info(): AdapterInfo {
    const host = this.#host.info();
    return {
      ...host,
      kind: 'lambda-microvms-guest',
      isolation: `the Lambda MicroVM (Firecracker); inside it, ${host.isolation}`,
    };
  }

  async capabilities(): Promise<Capabilities> {
    const host = await this.#host.capabilities();
    return { ...host, features: host.features.filter((f) => guestFeatures.includes(f)) };
  }

  capacity(): Promise<Capacity> {
    return this.#host.capacity();
  }

  health(): Promise<void> {
    return this.#host.health();
  }

  /** The VM's sandbox; a second, different sandbox is refused (one VM, one sandbox). */
  async create(request: CreateRequest): Promise<Instance> {
    const owner = await this.#readOwner();
    if (owner !== undefined && owner.sandboxId !== request.id)
      throw adapterErrors.invalidState(`this MicroVM already holds sandbox ${owner.sandboxId}`);
    const instance = await this.#host.create(request);
    if (owner === undefined) {
      this.#owner = { sandboxId: request.id, installation: request.installation };
      await writeFile(this.#ownerFile, JSON.stringify(this.#owner), { mode: 0o600 });
    }
    return { ...instance, ref: guestRef };
  }

  async get(): Promise<Instance> {
    return { ...(await this.#host.get(await this.#sandbox())), ref: guestRef };
  }

  async list(installation: string): Promise<Instance[]> {
    return (await this.#host.list(installation)).map((instance) => ({ ...instance, ref: guestRef }));
  }

  async delete(): Promise<void> {
    const owner = await this.#readOwner();
    if (owner !== undefined) await this.#host.delete(owner.sandboxId);
  }

  async exec(_ref: string, req: ExecRequest, opts?: ExecOptions): Promise<ExecResult> {
    return this.#host.exec(await this.#sandbox(), req, opts);
  }

  async execStream(_ref: string, req: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number> {
    return this.#host.execStream(await this.#sandbox(), req, emit, opts);
  }

  async readFile(_ref: string, path: string, opts?: ReadFileOptions): Promise<Uint8Array> {
    return this.#host.readFile(await this.#sandbox(), path, opts);
  }

  async writeFile(_ref: string, path: string, content: Uint8Array): Promise<void> {
    return this.#host.writeFile(await this.#sandbox(), path, content);
  }

  async listFiles(_ref: string, path: string): Promise<FileInfo[]> {
    return this.#host.listFiles(await this.#sandbox(), path);
  }

  // Interactive processes live in the guest agent, the VM's one process that every request reaches:
  // any container of the control plane may send the next input.
  async startProcess(_ref: string, request: ProcessStartRequest): Promise<ProcessInfo> {
    return this.#host.startProcess(await this.#sandbox(), request);
  }

  async listProcesses(): Promise<ProcessInfo[]> {
    return this.#host.listProcesses(await this.#sandbox());
  }

  async attachProcess(
    _ref: string,
    pid: number,
    emit: ExecEmit,
    opts?: CallOptions,
  ): Promise<number | undefined> {
    return this.#host.attachProcess(await this.#sandbox(), pid, emit, opts);
  }

  async readProcessOutput(_ref: string, pid: number, maxBytes: number): Promise<ProcessOutput> {
    return this.#host.readProcessOutput(await this.#sandbox(), pid, maxBytes);
  }

  async writeStdin(_ref: string, pid: number, data: Uint8Array): Promise<void> {
    return this.#host.writeStdin(await this.#sandbox(), pid, data);
  }

  async closeStdin(_ref: string, pid: number): Promise<void> {
    return this.#host.closeStdin(await this.#sandbox(), pid);
  }

  async resizeProcess(_ref: string, pid: number, size: TerminalSize): Promise<void> {
    return this.#host.resizeProcess(await this.#sandbox(), pid, size);
  }

  async signalProcess(_ref: string, pid: number, signal: ProcessSignal): Promise<void> {
    return this.#host.signalProcess(await this.#sandbox(), pid, signal);
  }

  async #sandbox(): Promise<string> {
    const owner = await this.#readOwner();
    if (owner === undefined) throw adapterErrors.notFound(guestRef);
    return owner.sandboxId;
  }

  async #readOwner(): Promise<Owner | undefined> {
    if (this.#owner !== undefined) return this.#owner;
    let text: string;
    try {
      text = await readFile(this.#ownerFile, 'utf8');
    } catch {
      return undefined;
    }
    const parsed = safeParseJsonText(ownerSchema, text);
    this.#owner = parsed.success ? parsed.data : undefined;
    return this.#owner;
  }
}
