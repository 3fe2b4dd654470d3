import { createHash } from 'node:crypto';
import { isIdleKeeper, isTtlExtender } from '../adapter/port.ts';
import { canonicalJson } from '../audit/chain.ts';
import { billingAfterTtlChange } from '../budgets/billing.ts';
import type { Config } from '../config.ts';
import { errors, isApiError } from '../errors.ts';
import { newId } from '../ids.ts';
import { describeError, type Log } from '../log.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import type { WorkQueue } from '../queue/port.ts';
import { reservedLabelPrefix } from '../schemas/common.ts';
import type { SandboxIdle } from '../schemas/sandbox-parts.ts';
import { isTerminal } from '../schemas/sandbox-status.ts';
import {
  type CreateSandboxRequest,
  defaultTtlSeconds,
  type ExecRequest,
  type ExecResult,
  type SandboxView,
} from '../schemas/sandboxes.ts';
import type { Page, PageRequest } from '../store/page.ts';
import { queuedSandbox, type SandboxRecord } from '../store/records.ts';
import { readAlong } from '../store/request-reads.ts';
import type { SandboxFilter, SandboxPatch, SandboxStore } from '../store/sandboxes/port.ts';
import type { SnapshotStore } from '../store/snapshots/port.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import type { WarmStore } from '../store/warm/port.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import { answerFromWarm, logWarmAnswer } from '../warm/claim.ts';
import { admit } from './admission.ts';
import { commandEnv } from './command-env.ts';
import { boundExecResult } from './exec-output.ts';
import { prepareExecStream } from './exec-stream.ts';
import { followBackendIdleOf, idledAwaitingAccess, startIdleClock, wentIdle } from './idle.ts';
import { requestLifecycle } from './lifecycle-request.ts';
import { requireRunAsOffered } from './run-as.ts';
import { requireRunning } from './status-guards.ts';
import { sandboxView, transitionSandbox } from './transition.ts';
import { wakeWaiters } from './wake-waiters.ts';

/** Runs a read-modify-write again (up to 3 times) when the store reports another writer got there first. */
export async function retryOnConflict<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!(isApiError(error) && error.code === 'conflict') || attempt >= attempts) throw error;
    }
  }
}

/** Polls `read` while `busy`, at most `seconds`: the API's bounded wait on a worker. */
export async function waitWhile<T>(
  read: () => Promise<T>,
  busy: (value: T) => boolean,
  seconds: number,
): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let delay = 50;
  for (;;) {
    const value = await read();
    if (!busy(value) || Date.now() + delay > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 500);
  }
}

export interface SandboxServiceDeps {
  store: TenancyStore & SandboxStore & SnapshotStore & WarmStore;
  queue: WorkQueue;
  pools: PoolRegistry;
  config: Config;
  log: Log;
  now?: () => Date;
}

/** How long an Idempotency-Key is remembered. */
export const idempotencyWindowSeconds = 24 * 3600;

/** Tenant-facing sandbox operations. Every read is scoped: another org's sandbox is not_found. */
export class SandboxService {
  readonly #deps: SandboxServiceDeps;
  readonly #now: () => Date;

  constructor(deps: SandboxServiceDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /**
   * Create: admission (lib/sandboxes/admission.ts) checks the request and what can never run, then the
   * record is written (queued) and the provision message sent. With an Idempotency-Key, a repeat with the same body
   * returns the first sandbox and a repeat with another body is a conflict.
   */
  async create(
    principal: OrgPrincipal,
    request: CreateSandboxRequest,
    idempotencyKey?: string,
    /** The control plane's own stamps: labels under the reserved prefix, which tenants cannot set. */
    internal: { forkedFrom?: string; stamps?: Record<string, string> } = {},
  ): Promise<{ sandbox: SandboxView; replayed: boolean }> {
    const admitted = await admit(this.#deps, principal, request);
    const { projectId, allowedPools, capabilities, classification, resources, template, regions } = admitted;
    const nowDate = this.#now();
    const now = nowDate.toISOString();
    const record = queuedSandbox(
      {
        id: newId('sandbox'),
        orgId: principal.orgId,
        projectId,
        template,
        resources,
        labels: {
          ...request.labels,
          ...(internal.forkedFrom !== undefined && { 'differently.dev/forked-from': internal.forkedFrom }),
          ...Object.fromEntries(
            Object.entries(internal.stamps ?? {}).map(([key, value]) => [
              `${reservedLabelPrefix}${key}`,
              value,
            ]),
          ),
        },
        capabilities,
        env: request.env ?? {},
        ttlSeconds: request.ttlSeconds ?? defaultTtlSeconds,
        queueTimeoutSeconds: request.queueTimeoutSeconds ?? null,
        allowedPools,
        regions,
        fromSnapshot: request.fromSnapshot ?? null,
        classification,
        idle: admitted.idle,
        network: admitted.network,
      },
      now,
    );
    const idempotency =
      idempotencyKey === undefined
        ? undefined
        : {
            // Scoped to what the caller may see: an org-wide key, or one project's. Another project's
            // key reusing the same Idempotency-Key makes its own sandbox and never sees this one.
            key: `${principal.projectId ?? 'org'}/${idempotencyKey}`,
            requestHash: createHash('sha256').update(canonicalJson(request)).digest('hex'),
            expiresAt: new Date(nowDate.getTime() + idempotencyWindowSeconds * 1000).toISOString(),
          };
    const creation = (sandbox: SandboxRecord) => ({
      actor: principal.keyId,
      action: 'sandbox.created',
      target: sandbox.id,
      details: {
        projectId,
        resources,
        template: sandbox.template,
        network: sandbox.network,
        // A claimed warm instance is running from its creation: its one event says so, and where (its
        // lifecycle event is `running`, lib/events/port.ts).
        ...(sandbox.warm !== null && {
          status: sandbox.status,
          pool: sandbox.pool,
          warm: { pool: sandbox.pool, readyAt: sandbox.warm.readyAt },
        }),
      },
    });
    const warm = await answerFromWarm(this.#deps, record, admitted.warmPools, creation, idempotency, nowDate);
    logWarmAnswer(this.#deps.log, warm, record, nowDate);
    if (warm.kind !== 'miss') {
      if (warm.kind === 'claimed') await startIdleClock(this.#deps, warm.sandbox, nowDate);
      return { sandbox: sandboxView(warm.sandbox), replayed: warm.kind === 'replayed' };
    }
    // Record first, message second: if the send fails the sandbox stays queued and the sweep requeues it.
    const result = await this.#deps.store.createSandbox(record, creation(record), idempotency, {
      maxWaiting: admitted.maxQueued,
    });
    if (!result.replayed) await this.#enqueue('provision', result.sandbox);
    return { sandbox: sandboxView(result.sandbox), replayed: result.replayed };
  }

  async get(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    return sandboxView(await this.load(principal, id));
  }

  async list(principal: OrgPrincipal, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxView>> {
    const projectId = principal.projectId ?? filter.projectId;
    const result = await this.#deps.store.listSandboxes(principal.orgId, { ...filter, projectId }, page);
    return { items: result.items.map(sandboxView), nextCursor: result.nextCursor };
  }

  /**
   * PATCH: labels replace the tenant's labels; ttlSeconds resets expiresAt from now and, where the
   * adapter can, moves the provider-side lifetime too (E0.20). Where it cannot, the answer says so.
   */
  async update(
    principal: OrgPrincipal,
    id: string,
    request: { ttlSeconds?: number | undefined; labels?: Record<string, string> | undefined },
  ): Promise<SandboxView & { providerTtl?: { extended: boolean; note: string } }> {
    // Read-modify-write again when a worker changed the sandbox in between.
    const record = await retryOnConflict(async () => {
      const current = await this.load(principal, id);
      return this.#applyUpdate(principal, current, request);
    });
    const view = sandboxView(record);
    if (request.ttlSeconds === undefined) return view;
    return { ...view, providerTtl: await this.#extendBackstop(record, request.ttlSeconds) };
  }

  async #applyUpdate(
    principal: OrgPrincipal,
    record: SandboxRecord,
    request: { ttlSeconds?: number | undefined; labels?: Record<string, string> | undefined },
  ): Promise<SandboxRecord> {
    const id = record.id;
    const now = this.#now();
    const patch: SandboxPatch = { updatedAt: now.toISOString() };
    if (request.labels !== undefined) {
      // Tenants replace their own labels; the control plane's stamps (differently.dev/...) stay.
      const system = Object.entries(record.labels).filter(([key]) => key.startsWith(reservedLabelPrefix));
      patch.labels = { ...request.labels, ...Object.fromEntries(system) };
    }
    if (request.ttlSeconds !== undefined) {
      if (isTerminal(record.status) || record.status === 'terminating') {
        throw errors.invalidState(`the TTL of a ${record.status} sandbox cannot change`, {
          status: record.status,
        });
      }
      patch.ttlSeconds = request.ttlSeconds;
      if (record.expiresAt !== null)
        patch.expiresAt = new Date(now.getTime() + request.ttlSeconds * 1000).toISOString();
      // The budget reservation follows the new lifetime (a longer one may be refused: quota_exceeded).
      patch.billing = billingAfterTtlChange(
        record,
        { ttlSeconds: request.ttlSeconds, expiresAt: patch.expiresAt ?? null },
        now,
      );
    }
    return this.#deps.store.updateSandbox(record, patch, {
      audit: {
        actor: principal.keyId,
        action: 'sandbox.updated',
        target: id,
        details: {
          ...(request.ttlSeconds !== undefined && { ttlSeconds: request.ttlSeconds }),
          labels: request.labels !== undefined,
        },
      },
    });
  }

  async #extendBackstop(
    record: SandboxRecord,
    ttlSeconds: number,
  ): Promise<{ extended: boolean; note: string }> {
    if (record.pool === null || record.backendRef === null) {
      return {
        extended: false,
        note: 'no backend instance yet: the backend gets this TTL when it is created',
      };
    }
    const adapter = this.#deps.pools.adapterOf(record.pool);
    if (!isTtlExtender(adapter)) {
      return {
        extended: false,
        note: `the ${adapter.info().kind} backend's own lifetime was set at creation and cannot be moved: it may end the sandbox earlier, and the reconciler then marks it failed`,
      };
    }
    await adapter.extendTtl(record.backendRef, ttlSeconds, { signal: AbortSignal.timeout(30_000) });
    return { extended: true, note: 'the backend lifetime was moved too' };
  }

  /**
   * Terminate: idempotent. A sandbox already terminating or terminated is returned as it is. A worker's
   * write between our read and our write (the sandbox just started running, say) is not the caller's
   * problem: the read-modify-write is done again on the new version.
   */
  async delete(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    // What was read with the key serves the first attempt only (request reads are given once).
    return retryOnConflict(() => this.#delete(principal, id));
  }

  async #delete(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    const record = await this.load(principal, id);
    if (record.status === 'terminating' || record.status === 'terminated') return sandboxView(record);
    const updated = await transitionSandbox(
      this.#deps.store,
      record,
      'terminating',
      { statusMessage: 'termination requested' },
      { now: this.#now(), actor: principal.keyId },
    );
    await this.#enqueue('terminate', updated);
    // Its reservation was released with the move to terminating: let waiters use it now. The counts of
    // waiting sandboxes (the org's, and any org's on the pools) usually came with the key: where one is
    // zero, its queue is not read.
    const orgWaiting = readAlong.waiting(record.orgId);
    const waitingOnPools = readAlong.waitingOnPools(record.orgId);
    await wakeWaiters(this.#deps, {
      orgId: record.orgId,
      pool: record.pool,
      ...(orgWaiting !== undefined && { orgWaiting }),
      ...(waitingOnPools !== undefined && { waitingOnPools }),
    });
    return sandboxView(updated);
  }

  async exec(principal: OrgPrincipal, id: string, request: ExecRequest): Promise<ExecResult> {
    const { syncExecMaxSeconds } = this.#deps.config.api;
    if (request.timeoutSeconds !== undefined && request.timeoutSeconds > syncExecMaxSeconds) {
      throw errors.invalidRequest(
        `timeoutSeconds ${request.timeoutSeconds} is longer than the synchronous exec allows (${syncExecMaxSeconds} s): use POST /v1/sandboxes/{id}/exec?stream=1 for long commands`,
        { field: 'timeoutSeconds', max: syncExecMaxSeconds },
      );
    }
    const started = Date.now();
    const record = requireRunning(await this.loadForUse(principal, id));
    requireRunAsOffered(this.#deps, record, request.user);
    const adapter = this.#deps.pools.adapterOf(record.pool);
    const maxOutputBytes = this.#deps.config.api.execOutputMaxBytes;
    // A resume after idleness took part of the request's time: the command gets what is left.
    const left = Math.max(1, syncExecMaxSeconds - Math.floor((Date.now() - started) / 1000));
    const done = this.keepActive(record);
    try {
      const result = await adapter.exec(
        record.backendRef,
        {
          ...request,
          ...withEnv(commandEnv(record, request.env)),
          timeoutSeconds: Math.min(request.timeoutSeconds ?? syncExecMaxSeconds, left),
        },
        // The adapter's own timeout is authoritative; this bound only stops a backend that never answers.
        // Adapters that collect output stop at maxOutputBytes; every result is bounded here as well.
        { signal: AbortSignal.timeout((syncExecMaxSeconds + 5) * 1000), maxOutputBytes },
      );
      return boundExecResult(result, maxOutputBytes);
    } finally {
      await done();
    }
  }

  /** A call that acts as `user` (E2B's file calls as root): refused unless the sandbox's pool offers it. */
  async requireRunAs(principal: OrgPrincipal, id: string, user: 'root' | undefined): Promise<void> {
    if (user === undefined) return;
    requireRunAsOffered(this.#deps, requireRunning(await this.loadForUse(principal, id)), user);
  }

  /** Streamed exec: checks now, output later (see lib/sandboxes/exec-stream.ts). */
  async execStream(principal: OrgPrincipal, id: string, request: ExecRequest, cancelled?: AbortSignal) {
    return prepareExecStream(this.#deps, this, principal, id, request, cancelled);
  }

  /**
   * A tenant's sandbox, for an operation on it: not_found if the principal may not see it, so ids of
   * other tenants leak nothing. Taken from what the request read with its key when the route asked for
   * it (lib/store/request-reads.ts), otherwise read now. The pool registry is synced too (cheap when recent): the sandbox may
   * live on a pool added through the admin API after this container started.
   */
  async load(principal: OrgPrincipal, id: string): Promise<SandboxRecord> {
    const read = readAlong.sandbox(principal.orgId, id);
    const [record] = await Promise.all([
      read !== undefined ? (read ?? undefined) : this.#deps.store.getSandbox(principal.orgId, id),
      this.#deps.pools.sync(),
    ]);
    if (record === undefined || (principal.projectId !== null && record.projectId !== principal.projectId)) {
      throw errors.notFound('sandbox', id);
    }
    await this.#deps.pools.ensure(record.pool);
    return record;
  }

  /**
   * The sandbox for an exec, file or port call. With an idle policy the call counts as activity, and a
   * sandbox paused or stopped for idleness is resumed (started) first: the API waits for it up to
   * api.operationWaitSeconds, then answers 503 asking to try again while it is still on its way.
   */
  async loadForUse(principal: OrgPrincipal, id: string): Promise<SandboxRecord> {
    const record = await this.load(principal, id);
    const idle = record.idle;
    if (idle === null) return record;
    const now = this.#now();
    const before = await this.#deps.store.touchSandbox(record.orgId, record.id, now.toISOString());
    let current = record;
    if (
      idle.enforcedBy === 'backend' &&
      current.status === 'running' &&
      wentIdle(current, idle, before, now)
    ) {
      // Idle long enough for the backend's own timer: it may have paused or stopped the instance before
      // the control plane's check saw it. Follow it now, so this call resumes it instead of failing.
      current = await this.#followBackendIdle(principal, current, idle, now);
    }
    if (idledAwaitingAccess(current)) {
      const action = current.status === 'paused' ? 'resume' : 'start';
      try {
        current = await requestLifecycle(this.#deps, current, action, {
          actor: principal.keyId,
          cause: 'idle',
          now,
          statusMessage: `${action} on access after idleness`,
        });
      } catch (error) {
        // Another call resumed it first: wait for that one.
        if (!isApiError(error) || error.code !== 'conflict') throw error;
        current = await this.load(principal, id);
      }
    }
    if (!resumingAfterIdle(current)) return current;
    const latest = await waitWhile(
      () => this.#deps.store.getSandbox(record.orgId, id),
      (r) => r !== undefined && resumingAfterIdle(r),
      this.#deps.config.api.operationWaitSeconds,
    );
    if (latest !== undefined && !resumingAfterIdle(latest)) return latest;
    throw errors.providerUnavailable(`sandbox ${id} is resuming after idleness: try again in a few seconds`, {
      sandboxId: id,
      status: latest?.status ?? current.status,
    });
  }

  async #followBackendIdle(
    principal: OrgPrincipal,
    record: SandboxRecord,
    idle: SandboxIdle,
    now: Date,
  ): Promise<SandboxRecord> {
    if (record.backendRef === null || record.pool === null) return record;
    const adapter = this.#deps.pools.adapterOf(record.pool);
    try {
      return (
        (await followBackendIdleOf(this.#deps.store, adapter, record, idle, record.backendRef, now)) ?? record
      );
    } catch (error) {
      // The idle check or another call recorded it first.
      if (!isApiError(error) || error.code !== 'conflict') throw error;
      return this.load(principal, record.id);
    }
  }

  /**
   * While a command runs on a sandbox with an idle policy it is in use: its activity is recorded every
   * half idle period (at most a minute apart) until the returned stop is called, which records it once
   * more. Without this a command longer than the period (a streamed exec, an E2B process) would be
   * paused under it. Best effort: a failed write is logged; the next one follows.
   */
  keepActive(record: SandboxRecord): () => Promise<void> {
    const idle = record.idle;
    if (idle === null) return async () => {};
    // A backend that keeps the policy itself is told too: its timer does not see a command running.
    const adapter = record.pool === null ? undefined : this.#deps.pools.adapterOf(record.pool);
    const backend =
      idle.enforcedBy === 'backend' &&
      adapter !== undefined &&
      isIdleKeeper(adapter) &&
      record.backendRef !== null
        ? { adapter, ref: record.backendRef }
        : undefined;
    const touch = () =>
      Promise.all([
        this.#deps.store.touchSandbox(record.orgId, record.id, this.#now().toISOString()),
        backend?.adapter.markActive(backend.ref, { signal: AbortSignal.timeout(10_000) }),
      ]).catch((error: unknown) =>
        this.#deps.log.warn('could not record sandbox activity', {
          sandboxId: record.id,
          error: describeError(error),
        }),
      );
    const everyMs = Math.min(60, Math.max(1, Math.floor(idle.afterSeconds / 2))) * 1000;
    const timer = setInterval(() => void touch(), everyMs);
    return async () => {
      clearInterval(timer);
      await touch();
    };
  }

  async #enqueue(queue: 'provision' | 'terminate', record: SandboxRecord): Promise<void> {
    try {
      await this.#deps.queue.send(queue, { sandboxId: record.id, orgId: record.orgId });
    } catch (error) {
      this.#deps.log.error('queue send failed after the record was written; the sweep will requeue it', {
        queue,
        sandboxId: record.id,
        orgId: record.orgId,
        error: describeError(error),
      });
    }
  }
}

/** On its way back from an idle pause or stop, because a call asked for it. */
function resumingAfterIdle(record: SandboxRecord): boolean {
  return (record.status === 'resuming' || record.status === 'starting') && record.operation?.cause === 'idle';
}

function withEnv(env: Record<string, string> | undefined): { env?: Record<string, string> } {
  return env === undefined ? {} : { env };
}
