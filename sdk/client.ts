import type * as z from 'zod';
import type { NetworkPolicy } from '../lib/network/policy.ts';
import type { BudgetView } from '../lib/schemas/tenancy.ts';
import type { WebhookDeliveryStatus, WebhookView } from '../lib/schemas/webhooks.ts';

export type { BudgetView, CreatedKey, Snapshot, WebhookDeliveryStatus, WebhookView };

import type { ProcessSignal, TerminalSize } from '../lib/adapter/processes.ts';
import type {
  createPoolSchema,
  PoolDetail,
  policyViewSchema,
  templateViewSchema,
  trustReportSchema,
  updatePoolSchema,
} from '../lib/pools/admin-schemas.ts';
import type { reconcileReportSchema } from '../lib/schemas/admin.ts';
import type { auditEventSchema, auditVerificationSchema } from '../lib/schemas/audit.ts';
import { errorEnvelopeSchema } from '../lib/schemas/common.ts';
import { type ExecStreamLine, execStreamLines, ndjsonLines } from '../lib/schemas/exec-stream-lines.ts';
import {
  type AttachStreamLine,
  attachLineSchema,
  type ProcessView,
  type processOutputSchema,
  type StartProcessRequest,
} from '../lib/schemas/processes.ts';
import type { fileInfoSchema, Snapshot, snapshotDeletedSchema } from '../lib/schemas/sandbox-operations.ts';
import { transitionalStatuses as transitional } from '../lib/schemas/sandbox-status.ts';
import type {
  CreateSandboxRequest,
  ExecRequest,
  ExecResult,
  SandboxView,
  updatedSandboxSchema,
} from '../lib/schemas/sandboxes.ts';
import type { CreatedKey, KeyView, OrgView, orgUsageSchema, ProjectView } from '../lib/schemas/tenancy.ts';
import type { Quota } from '../lib/schemas/tenancy-parts.ts';
import { DifferentlyError, DifferentlyNetworkError } from './errors.ts';

/** The statuses a wait goes through (the server's own list). */
const transitionalStatuses: readonly string[] = transitional;

export type FileInfo = z.infer<typeof fileInfoSchema>;
export type AuditEvent = z.infer<typeof auditEventSchema>;
export type AuditVerification = z.infer<typeof auditVerificationSchema>;
export type ReconcileReport = z.infer<typeof reconcileReportSchema>;
export type UpdatedSandbox = z.infer<typeof updatedSandboxSchema>;
export type Page<T> = { items: T[]; nextCursor: string | null };
export type Project = ProjectView;
export type OrgUsage = z.infer<typeof orgUsageSchema>;
export type Template = z.infer<typeof templateViewSchema>;
export type TrustReport = z.infer<typeof trustReportSchema>;
export type PolicyView = z.infer<typeof policyViewSchema>;
export type CreatePool = z.input<typeof createPoolSchema>;
export type UpdatePool = z.input<typeof updatePoolSchema>;
export type {
  AttachStreamLine,
  CreateSandboxRequest,
  ExecRequest,
  ExecResult,
  ExecStreamLine,
  PoolDetail,
  ProcessSignal,
  ProcessView,
  SandboxView,
  StartProcessRequest,
  TerminalSize,
};
export type ProcessOutput = z.infer<typeof processOutputSchema>;

/** Statuses a lifecycle call passes through while the backend works. */

export interface ClientOptions {
  /** The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/live */
  endpoint: string;
  apiKey: string;
  /** Attempts for requests that are safe to repeat when the API answers 503. @default 4 */
  attempts?: number;
  /** The first retry's delay; it doubles each time. @default 250 ms */
  retryBaseMs?: number;
  fetch?: typeof fetch;
}

const envelope = errorEnvelopeSchema;

/** How a wait runs: its bound, its polling interval, and who hears of each change it sees. */
export interface WaitOptions<T> {
  /** Give up after this long with a `timeout` error naming the last status and why it waits. */
  timeoutMs?: number;
  intervalMs?: number;
  /** Called with the first record read and again each time its status or statusMessage changes. */
  onProgress?: (current: T) => void;
}

/** Calls `onProgress` with a record only when its state (as `key` says it) differs from the last one. */
function changes<T>(onProgress: ((current: T) => void) | undefined) {
  let last: string | undefined;
  return (current: T, key: string) => {
    if (key === last) return;
    last = key;
    onProgress?.(current);
  };
}

/** Options of a lifecycle call: `wait` for a 202's sandbox to settle, for at most `timeoutMs`. */
export interface LifecycleOptions {
  wait?: boolean;
  timeoutMs?: number;
}

interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  raw?: Uint8Array<ArrayBuffer>;
  headers?: Record<string, string>;
  /** Safe to send again after a 503 (reads, deletes, creates with an Idempotency-Key). */
  retry?: boolean;
  /** Ends the request (a streamed answer: the stream). */
  signal?: AbortSignal;
}

/**
 * A typed client for every route of the Differently API. Errors are DifferentlyError (code, message,
 * details, status) or DifferentlyNetworkError (which endpoint could not be reached).
 */
export class DifferentlyClient {
  readonly #endpoint: string;
  readonly #apiKey: string;
  readonly #attempts: number;
  readonly #retryBaseMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.#endpoint = options.endpoint.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#attempts = Math.max(options.attempts ?? 4, 1);
    this.#retryBaseMs = options.retryBaseMs ?? 250;
    // Called as a function, not as this client's method: a browser's fetch must be called on its window.
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  health(): Promise<{ status: 'ok' }> {
    return this.#json('GET', '/v1/health', { retry: true });
  }

  /** Creates a sandbox (queued). An Idempotency-Key is set for you, so a retried create makes one sandbox. */
  createSandbox(
    request: CreateSandboxRequest = {},
    options: { idempotencyKey?: string } = {},
  ): Promise<SandboxView> {
    return this.#json('POST', '/v1/sandboxes', {
      body: request,
      headers: { 'idempotency-key': options.idempotencyKey ?? globalThis.crypto.randomUUID() },
      retry: true,
    });
  }

  getSandbox(id: string): Promise<SandboxView> {
    return this.#json('GET', `/v1/sandboxes/${encodeURIComponent(id)}`, { retry: true });
  }

  listSandboxes(
    query: { status?: string; projectId?: string; label?: string; cursor?: string; limit?: number } = {},
  ) {
    return this.#json<Page<SandboxView>>('GET', '/v1/sandboxes', { query, retry: true });
  }

  updateSandbox(
    id: string,
    patch: { ttlSeconds?: number; labels?: Record<string, string> },
  ): Promise<UpdatedSandbox> {
    return this.#json('PATCH', `/v1/sandboxes/${encodeURIComponent(id)}`, { body: patch });
  }

  deleteSandbox(id: string): Promise<SandboxView> {
    return this.#json('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`, { retry: true });
  }

  /** Waits until the sandbox runs; throws if it fails, is terminated, or the time runs out. */
  async waitUntilRunning(id: string, options: WaitOptions<SandboxView> = {}): Promise<SandboxView> {
    const deadline = Date.now() + (options.timeoutMs ?? 300_000);
    const seen = changes(options.onProgress);
    for (;;) {
      const sandbox = await this.getSandbox(id);
      seen(sandbox, `${sandbox.status}|${sandbox.statusMessage ?? ''}`);
      if (sandbox.status === 'running') return sandbox;
      if (
        sandbox.status === 'failed' ||
        sandbox.status === 'terminated' ||
        sandbox.status === 'terminating'
      ) {
        throw new DifferentlyError(
          409,
          'invalid_state',
          `sandbox ${id} is ${sandbox.status}: ${sandbox.statusMessage ?? ''}`,
          {
            status: sandbox.status,
          },
        );
      }
      if (Date.now() > deadline) {
        throw new DifferentlyError(
          408,
          'timeout',
          `sandbox ${id} was not running in time (last: ${sandbox.status}${sandbox.statusMessage === null ? '' : `: ${sandbox.statusMessage}`})`,
          {
            status: sandbox.status,
            ...(sandbox.waitingFor !== null && { waitingFor: sandbox.waitingFor }),
          },
        );
      }
      await sleep(options.intervalMs ?? 500);
    }
  }

  /**
   * Waits while a stop, start, pause or resume is under way (the API answered 202 with `stopping`,
   * `starting`, `pausing` or `resuming`) and returns the settled sandbox. Throws the operation's own
   * error when the backend refused it (the sandbox is then back in the status it had).
   */
  async waitUntilSettled(id: string, options: WaitOptions<SandboxView> = {}): Promise<SandboxView> {
    const deadline = Date.now() + (options.timeoutMs ?? 900_000);
    const seen = changes(options.onProgress);
    for (;;) {
      const sandbox = await this.getSandbox(id);
      seen(sandbox, `${sandbox.status}|${sandbox.statusMessage ?? ''}`);
      if (!transitionalStatuses.includes(sandbox.status)) {
        const operation = sandbox.operation;
        if (operation?.state === 'failed' && operation.error !== null) {
          throw new DifferentlyError(503, operation.error.code, operation.error.message, {
            status: sandbox.status,
            action: operation.action,
          });
        }
        return sandbox;
      }
      if (Date.now() > deadline) {
        throw new DifferentlyError(408, 'timeout', `sandbox ${id} is still ${sandbox.status}`, {
          status: sandbox.status,
        });
      }
      await sleep(options.intervalMs ?? 500);
    }
  }

  /** Waits until a snapshot is ready; throws if it failed (with its reason) or the time runs out. */
  async waitUntilSnapshotReady(id: string, options: WaitOptions<Snapshot> = {}): Promise<Snapshot> {
    const deadline = Date.now() + (options.timeoutMs ?? 900_000);
    const seen = changes(options.onProgress);
    for (;;) {
      const snapshot = await this.getSnapshot(id);
      seen(snapshot, `${snapshot.status}|${snapshot.statusMessage ?? ''}`);
      if (snapshot.status === 'ready') return snapshot;
      if (snapshot.status === 'failed') {
        throw new DifferentlyError(503, 'provider_unavailable', snapshot.statusMessage ?? 'snapshot failed', {
          status: snapshot.status,
        });
      }
      if (Date.now() > deadline) {
        throw new DifferentlyError(408, 'timeout', `snapshot ${id} is still ${snapshot.status}`, {
          status: snapshot.status,
        });
      }
      await sleep(options.intervalMs ?? 500);
    }
  }

  exec(id: string, request: ExecRequest): Promise<ExecResult> {
    return this.#json('POST', `/v1/sandboxes/${encodeURIComponent(id)}/exec`, { body: request });
  }

  /** Streamed exec: yields output events as produced, then one `{exitCode}` or `{error}`. */
  async *execStream(id: string, request: ExecRequest): AsyncGenerator<ExecStreamLine> {
    const response = await this.#send('POST', `/v1/sandboxes/${encodeURIComponent(id)}/exec`, {
      query: { stream: '1' },
      body: request,
    });
    let final = false;
    for await (const line of execStreamLines(response.body ?? [])) {
      if ('exitCode' in line || 'error' in line) final = true;
      yield line;
    }
    if (!final)
      yield { error: { code: 'provider_unavailable', message: 'the stream ended without a final event' } };
  }

  /** Starts an interactive process (stdin written later; `pty` for a terminal). Attach to read its output. */
  startProcess(id: string, request: StartProcessRequest): Promise<ProcessView> {
    return this.#json('POST', `${processesPath(id)}`, { body: request });
  }

  listProcesses(id: string): Promise<{ items: ProcessView[] }> {
    return this.#json('GET', processesPath(id), { retry: true });
  }

  getProcess(id: string, pid: number): Promise<ProcessView> {
    return this.#json('GET', processesPath(id, pid), { retry: true });
  }

  /**
   * Attaches to a process: yields `{process}`, its unread output and what it prints, then one `{exitCode}`,
   * `{detached}` (the stream's 14 minutes are up: attach again, nothing is lost) or `{error}`. Breaking
   * out of the loop detaches; the process runs on.
   */
  async *attachProcess(
    id: string,
    pid: number,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<AttachStreamLine> {
    const response = await this.#send('POST', `${processesPath(id, pid)}/attach`, {
      ...(options.signal !== undefined && { signal: options.signal }),
    });
    let final = false;
    for await (const line of ndjsonLines(attachLineSchema, response.body ?? [])) {
      if ('exitCode' in line || 'error' in line || 'detached' in line) final = true;
      yield line;
    }
    if (!final)
      yield { error: { code: 'provider_unavailable', message: 'the stream ended without a final event' } };
  }

  /** Writes to a process's stdin (text or bytes, 64 KiB at most a call); `close` ends its input after. */
  async writeStdin(
    id: string,
    pid: number,
    data: string | Uint8Array,
    options: { close?: boolean } = {},
  ): Promise<void> {
    await this.#send('POST', `${processesPath(id, pid)}/stdin`, {
      body: {
        ...(typeof data === 'string' ? { data } : { dataBase64: base64(data) }),
        ...(options.close === true && { close: true }),
      },
    });
  }

  async closeStdin(id: string, pid: number): Promise<void> {
    await this.#send('POST', `${processesPath(id, pid)}/stdin`, { body: { close: true } });
  }

  /** What a process printed since the last attach or read, without waiting. */
  readProcessOutput(id: string, pid: number, options: { maxBytes?: number } = {}): Promise<ProcessOutput> {
    return this.#json('GET', `${processesPath(id, pid)}/output`, {
      ...(options.maxBytes !== undefined && { query: { maxBytes: String(options.maxBytes) } }),
    });
  }

  async resizeProcess(id: string, pid: number, size: TerminalSize): Promise<void> {
    await this.#send('POST', `${processesPath(id, pid)}/resize`, { body: size, retry: true });
  }

  async signalProcess(id: string, pid: number, signal: ProcessSignal): Promise<void> {
    await this.#send('POST', `${processesPath(id, pid)}/signal`, { body: { signal } });
  }

  listFiles(id: string, path: string): Promise<{ items: FileInfo[] }> {
    return this.#json('GET', `/v1/sandboxes/${encodeURIComponent(id)}/files`, {
      query: { path },
      retry: true,
    });
  }

  async readFile(id: string, path: string): Promise<Uint8Array> {
    const response = await this.#send('GET', `/v1/sandboxes/${encodeURIComponent(id)}/files/content`, {
      query: { path },
      retry: true,
    });
    return new Uint8Array(await response.arrayBuffer());
  }

  async writeFile(id: string, path: string, content: Uint8Array | string): Promise<void> {
    // A copy in a plain ArrayBuffer: what fetch takes as a body everywhere (a view of a shared buffer is not).
    const raw = typeof content === 'string' ? new TextEncoder().encode(content) : new Uint8Array(content);
    await this.#send('PUT', `/v1/sandboxes/${encodeURIComponent(id)}/files/content`, {
      query: { path },
      raw,
      retry: true,
    });
  }

  /**
   * Stops the sandbox. The answer is the settled sandbox, or (202) the sandbox still stopping;
   * `wait: true` waits for it to settle (waitUntilSettled).
   */
  stop(id: string, options: LifecycleOptions = {}): Promise<SandboxView> {
    return this.#lifecycle('stop', id, options);
  }

  /** Starts a stopped sandbox; 202 and `wait` as for stop. */
  start(id: string, options: LifecycleOptions = {}): Promise<SandboxView> {
    return this.#lifecycle('start', id, options);
  }

  /** Pauses the sandbox; 202 and `wait` as for stop. */
  pause(id: string, options: LifecycleOptions = {}): Promise<SandboxView> {
    return this.#lifecycle('pause', id, options);
  }

  /** Resumes a paused sandbox; 202 and `wait` as for stop. */
  resume(id: string, options: LifecycleOptions = {}): Promise<SandboxView> {
    return this.#lifecycle('resume', id, options);
  }

  async #lifecycle(
    action: 'stop' | 'start' | 'pause' | 'resume',
    id: string,
    options: LifecycleOptions,
  ): Promise<SandboxView> {
    const sandbox = await this.#json<SandboxView>(
      'POST',
      `/v1/sandboxes/${encodeURIComponent(id)}/${action}`,
    );
    return options.wait === true && transitionalStatuses.includes(sandbox.status)
      ? this.waitUntilSettled(id, options)
      : sandbox;
  }

  /**
   * Snapshots the sandbox: the ready snapshot, or (202) one still `creating` when the backend needs longer;
   * `wait: true` waits until it is ready (waitUntilSnapshotReady).
   */
  async createSnapshot(
    id: string,
    kind: 'disk' | 'memory' = 'disk',
    options: { wait?: boolean; timeoutMs?: number } = {},
  ): Promise<Snapshot> {
    const snapshot = await this.#json<Snapshot>('POST', `/v1/sandboxes/${encodeURIComponent(id)}/snapshots`, {
      body: { kind },
    });
    return options.wait === true && snapshot.status === 'creating'
      ? this.waitUntilSnapshotReady(snapshot.id, options)
      : snapshot;
  }

  listSnapshots(query: { cursor?: string; limit?: number } = {}): Promise<Page<Snapshot>> {
    return this.#json('GET', '/v1/snapshots', { query, retry: true });
  }

  getSnapshot(id: string): Promise<Snapshot> {
    return this.#json('GET', `/v1/snapshots/${encodeURIComponent(id)}`, { retry: true });
  }

  deleteSnapshot(id: string): Promise<z.infer<typeof snapshotDeletedSchema>> {
    return this.#json('DELETE', `/v1/snapshots/${encodeURIComponent(id)}`, { retry: true });
  }

  fork(id: string): Promise<SandboxView> {
    return this.#json('POST', `/v1/sandboxes/${encodeURIComponent(id)}/fork`);
  }

  exposePort(id: string, port: number): Promise<{ url: string }> {
    return this.#json('POST', `/v1/sandboxes/${encodeURIComponent(id)}/ports`, { body: { port } });
  }

  audit(query: { cursor?: string; limit?: number } = {}): Promise<Page<AuditEvent>> {
    return this.#json('GET', '/v1/audit', { query, retry: true });
  }

  /** The org's quota, what it holds, and what is left. */
  usage(): Promise<OrgUsage> {
    return this.#json('GET', '/v1/usage', { retry: true });
  }

  templates(): Promise<{ items: Template[] }> {
    return this.#json('GET', '/v1/templates', { retry: true });
  }

  /** The trust report: each pool's operator, isolation, features and limitations, and the policy. */
  trust(): Promise<TrustReport> {
    return this.#json('GET', '/v1/trust', { retry: true });
  }

  openapi(): Promise<Record<string, unknown>> {
    return this.#json('GET', '/v1/openapi.json', { retry: true });
  }

  /**
   * Sends one JSON-RPC message to the MCP endpoint (streamable HTTP, stateless) and answers its replies in
   * order, whether the server streamed them (SSE) or answered JSON; a notification has none. Agents
   * usually speak MCP through the MCP SDK; this is the endpoint without one.
   */
  async mcp(message: Record<string, unknown>): Promise<unknown[]> {
    const response = await this.#send('POST', '/v1/mcp', {
      body: message,
      headers: { accept: 'application/json, text/event-stream' },
    });
    const text = await response.text();
    if (text === '') return [];
    if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      return text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line): unknown => JSON.parse(line.slice(5)));
    }
    const answer: unknown = JSON.parse(text);
    return Array.isArray(answer) ? answer : [answer];
  }

  /** Admin routes: need the admin key. */
  readonly admin = {
    createOrg: (body: { name: string; quota?: Partial<Quota> }): Promise<OrgView> =>
      this.#json('POST', '/v1/admin/orgs', { body }),
    listOrgs: (query: { cursor?: string; limit?: number } = {}): Promise<Page<OrgView>> =>
      this.#json('GET', '/v1/admin/orgs', { query, retry: true }),
    getOrg: (id: string): Promise<OrgView> =>
      this.#json('GET', `/v1/admin/orgs/${encodeURIComponent(id)}`, { retry: true }),
    createKey: (
      orgId: string,
      body: { name: string; projectId?: string; role?: 'admin' | 'member' },
    ): Promise<CreatedKey> =>
      this.#json('POST', `/v1/admin/orgs/${encodeURIComponent(orgId)}/keys`, { body }),
    listKeys: (orgId: string, query: { cursor?: string; limit?: number } = {}): Promise<Page<KeyView>> =>
      this.#json('GET', `/v1/admin/orgs/${encodeURIComponent(orgId)}/keys`, { query, retry: true }),
    revokeKey: (id: string): Promise<KeyView> =>
      this.#json('DELETE', `/v1/admin/keys/${encodeURIComponent(id)}`, { retry: true }),
    verifyAudit: (orgId?: string): Promise<AuditVerification> =>
      this.#json('GET', '/v1/admin/audit/verify', { query: { orgId }, retry: true }),
    rotateKey: (id: string): Promise<CreatedKey> =>
      this.#json('POST', `/v1/admin/keys/${encodeURIComponent(id)}/rotate`),
    createProject: (orgId: string, body: { name: string }): Promise<Project> =>
      this.#json('POST', `/v1/admin/orgs/${encodeURIComponent(orgId)}/projects`, { body }),
    listProjects: (orgId: string, query: { cursor?: string; limit?: number } = {}): Promise<Page<Project>> =>
      this.#json('GET', `/v1/admin/orgs/${encodeURIComponent(orgId)}/projects`, { query, retry: true }),
    setQuota: (orgId: string, body: Partial<Quota>): Promise<OrgView> =>
      this.#json('PUT', `/v1/admin/orgs/${encodeURIComponent(orgId)}/quota`, { body, retry: true }),
    /** The org's monthly budget in the pools' currency (null removes it): this month's view. */
    setBudget: (orgId: string, monthly: number | null): Promise<BudgetView> =>
      this.#json('PUT', `/v1/admin/orgs/${encodeURIComponent(orgId)}/budget`, {
        body: { monthly },
        retry: true,
      }),
    /**
     * The org's default egress policy (null removes it): sandboxes created afterwards that name none, and
     * whose template names none, take it; the installation's deny-list still holds (docs/network.md).
     */
    setNetworkPolicy: (orgId: string, policy: NetworkPolicy | null): Promise<OrgView> =>
      this.#json('PUT', `/v1/admin/orgs/${encodeURIComponent(orgId)}/network-policy`, {
        body: { policy },
        retry: true,
      }),
    /** The org's default idle policy (null removes it): sandboxes created afterwards take it. */
    setIdlePolicy: (
      orgId: string,
      policy: { afterSeconds: number; action?: 'pause' | 'stop' } | null,
    ): Promise<OrgView> =>
      this.#json('PUT', `/v1/admin/orgs/${encodeURIComponent(orgId)}/idle-policy`, {
        body: { policy },
        retry: true,
      }),
    /** Registers an endpoint for the org's lifecycle events; the answer's `secret` is shown only now. */
    createWebhook: (
      orgId: string,
      body: { url: string; events?: string[]; description?: string },
    ): Promise<WebhookView & { secret: string }> =>
      this.#json('POST', `/v1/admin/orgs/${encodeURIComponent(orgId)}/webhooks`, { body }),
    listWebhooks: (orgId: string): Promise<{ items: WebhookView[]; nextCursor: null }> =>
      this.#json('GET', `/v1/admin/orgs/${encodeURIComponent(orgId)}/webhooks`, { retry: true }),
    deleteWebhook: (orgId: string, webhookId: string): Promise<{ id: string; deleted: true }> =>
      this.#json(
        'DELETE',
        `/v1/admin/orgs/${encodeURIComponent(orgId)}/webhooks/${encodeURIComponent(webhookId)}`,
        { retry: true },
      ),
    /** A new secret; the previous one keeps signing beside it for 24 hours. */
    /** An endpoint's deliveries, newest first (kept 7 days): attempts, the last answer or error, delivered. */
    listWebhookDeliveries: (
      orgId: string,
      webhookId: string,
      query: { cursor?: string; limit?: number } = {},
    ): Promise<Page<WebhookDeliveryStatus>> =>
      this.#json(
        'GET',
        `/v1/admin/orgs/${encodeURIComponent(orgId)}/webhooks/${encodeURIComponent(webhookId)}/deliveries`,
        { query, retry: true },
      ),
    rotateWebhookSecret: (orgId: string, webhookId: string): Promise<WebhookView & { secret: string }> =>
      this.#json(
        'POST',
        `/v1/admin/orgs/${encodeURIComponent(orgId)}/webhooks/${encodeURIComponent(webhookId)}/rotate-secret`,
      ),
    getBudget: (orgId: string): Promise<BudgetView> =>
      this.#json('GET', `/v1/admin/orgs/${encodeURIComponent(orgId)}/budget`, { retry: true }),
    /** A project's monthly budget, counted besides its org's (null removes it). */
    setProjectBudget: (orgId: string, projectId: string, monthly: number | null): Promise<BudgetView> =>
      this.#json(
        'PUT',
        `/v1/admin/orgs/${encodeURIComponent(orgId)}/projects/${encodeURIComponent(projectId)}/budget`,
        { body: { monthly }, retry: true },
      ),
    getProjectBudget: (orgId: string, projectId: string): Promise<BudgetView> =>
      this.#json(
        'GET',
        `/v1/admin/orgs/${encodeURIComponent(orgId)}/projects/${encodeURIComponent(projectId)}/budget`,
        { retry: true },
      ),
    listPools: (): Promise<Page<PoolDetail>> => this.#json('GET', '/v1/admin/pools', { retry: true }),
    getPool: (name: string): Promise<PoolDetail> =>
      this.#json('GET', `/v1/admin/pools/${encodeURIComponent(name)}`, { retry: true }),
    createPool: (body: CreatePool): Promise<PoolDetail> => this.#json('POST', '/v1/admin/pools', { body }),
    updatePool: (name: string, body: UpdatePool): Promise<PoolDetail> =>
      this.#json('PATCH', `/v1/admin/pools/${encodeURIComponent(name)}`, { body, retry: true }),
    deletePool: (name: string): Promise<{ name: string; deleted: true }> =>
      this.#json('DELETE', `/v1/admin/pools/${encodeURIComponent(name)}`, { retry: true }),
    getPolicy: (): Promise<PolicyView> => this.#json('GET', '/v1/admin/policy', { retry: true }),
    setPolicy: (body: { allowExternal: boolean; externalPools: string[] }): Promise<PolicyView> =>
      this.#json('PUT', '/v1/admin/policy', { body, retry: true }),
    reconcile: (): Promise<ReconcileReport> => this.#json('POST', '/v1/admin/reconcile'),
  };

  async #json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.#send(method, path, options);
    return (await response.json()) as T;
  }

  /** Sends a request; 503 is retried with backoff when the request is safe to repeat. */
  async #send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(`${this.#endpoint}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const attempts = options.retry === true ? this.#attempts : 1;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method,
          headers: {
            authorization: `Bearer ${this.#apiKey}`,
            ...(options.body !== undefined && { 'content-type': 'application/json' }),
            ...(options.raw !== undefined && { 'content-type': 'application/octet-stream' }),
            ...options.headers,
          },
          ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
          ...(options.raw !== undefined && { body: options.raw }),
          ...(options.signal !== undefined && { signal: options.signal }),
        });
      } catch (error) {
        throw new DifferentlyNetworkError(this.#endpoint, { cause: error });
      }
      if (response.ok) return response;
      if (response.status === 503 && attempt < attempts) {
        await response.body?.cancel();
        await sleep(this.#retryBaseMs * 2 ** (attempt - 1));
        continue;
      }
      const text = await response.text();
      let parsed: z.infer<typeof envelope> | undefined;
      try {
        const result = envelope.safeParse(JSON.parse(text));
        if (result.success) parsed = result.data;
      } catch {
        // not JSON: reported below with the status
      }
      throw parsed === undefined
        ? new DifferentlyError(
            response.status,
            'http_error',
            `HTTP ${response.status}: ${text.slice(0, 200)}`,
            {},
          )
        : new DifferentlyError(
            response.status,
            parsed.error.code,
            parsed.error.message,
            parsed.error.details,
          );
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function processesPath(id: string, pid?: number): string {
  return `/v1/sandboxes/${encodeURIComponent(id)}/processes${pid === undefined ? '' : `/${pid}`}`;
}

/**
 * Bytes as base64 without Node's Buffer: the client runs in browsers too (the web console bundles it).
 * In slices, since String.fromCharCode takes its arguments on the stack.
 */
function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let at = 0; at < bytes.length; at += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}
