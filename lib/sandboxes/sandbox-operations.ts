import type { Feature } from '../adapter/features.ts';
import {
  type ExecutionAdapter,
  type FileInfo,
  isFileSystem,
  isPortExposer,
  isSnapshotter,
} from '../adapter/port.ts';
import { actors } from '../audit/chain.ts';
import { ApiError, errors, isApiError, isErrorCode } from '../errors.ts';
import { newId } from '../ids.ts';
import { describeError } from '../log.ts';
import type { Snapshot } from '../schemas/sandbox-operations.ts';
import type { LifecycleAction } from '../schemas/sandbox-parts.ts';
import { isTerminal, type SandboxStatus } from '../schemas/sandbox-status.ts';
import type { SandboxView } from '../schemas/sandboxes.ts';
import { encodeCursor } from '../store/cursor.ts';
import type { Page, PageRequest } from '../store/page.ts';
import type { SandboxRecord, SnapshotRecord } from '../store/records.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import { lifecycleMoves, snapshotableStatuses } from './lifecycle-moves.ts';
import { requestLifecycle } from './lifecycle-request.ts';
import { retryOnConflict, type SandboxService, type SandboxServiceDeps, waitWhile } from './service.ts';
import { sandboxView } from './transition.ts';

/** File content through the API: Lambda's 6 MB payload, less base64's third, leaves room for 4 MiB. */
export const maxFileBytes = 4 * 1024 * 1024;

export type { LifecycleAction } from '../schemas/sandbox-parts.ts';

/**
 * A snapshot as tenants see it, over REST and MCP alike: the backend's ref stays inside, and `updatedAt`
 * is always set (records written before it existed show their creation time).
 */
export function snapshotView(snapshot: SnapshotRecord): Snapshot {
  const { backendRef: _backendRef, ...visible } = snapshot;
  return { ...visible, updatedAt: snapshot.updatedAt ?? snapshot.createdAt };
}

/** What a lifecycle call, snapshot or fork answers: done (200/201), or accepted and still under way (202). */
export interface Accepted<T> {
  value: T;
  /** false when the operation settled within the API's wait; true when the worker is still on it. */
  pending: boolean;
}

/** The operations tenants use on a placed sandbox, beyond exec: lifecycle, files, snapshots, fork, ports. */
export class SandboxOperations {
  readonly #deps: SandboxServiceDeps;
  readonly #sandboxes: SandboxService;
  readonly #now: () => Date;

  constructor(deps: SandboxServiceDeps, sandboxes: SandboxService) {
    this.#deps = deps;
    this.#sandboxes = sandboxes;
    this.#now = deps.now ?? (() => new Date());
  }

  /**
   * Stop, start, pause, resume. The record moves to its transitional status first (start reserves cpu
   * and memory there: 429 when they no longer fit), then the operations worker calls the backend. The
   * API waits up to api.operationWaitSeconds for the worker: the settled record (200), or the
   * transitional one (202) when the backend needs longer. A failure the backend reports within the wait
   * is answered as the error; the record is back in its status with `operation.error`.
   */
  async lifecycle(
    principal: OrgPrincipal,
    id: string,
    action: LifecycleAction,
  ): Promise<Accepted<SandboxView>> {
    const move = lifecycleMoves[action];
    const record = await this.#sandboxes.load(principal, id);
    requireStatus(record, [move.from], `${action} it`);
    this.#adapterWith(record, move.feature, action);
    const requestedAt = this.#now().toISOString();
    // A worker's write between our read and our write (a progress note, the reconciler following state)
    // does not undo the call: the move is applied to the newer version if the status is unchanged.
    let current = record;
    const pending = await retryOnConflict(async () => {
      try {
        return await requestLifecycle(this.#deps, current, action, {
          actor: principal.keyId,
          cause: 'user',
          now: new Date(requestedAt),
        });
      } catch (error) {
        if (isApiError(error) && error.code === 'conflict') {
          current = await this.#sandboxes.load(principal, id);
          requireStatus(current, [move.from], `${action} it`);
        }
        throw error;
      }
    });
    const latest = await this.#waitWhile(
      () => this.#deps.store.getSandbox(record.orgId, id),
      (r) => r?.status === move.pending,
    );
    if (latest === undefined) return { value: sandboxView(pending), pending: true };
    if (latest.status === move.pending) return { value: sandboxView(latest), pending: true };
    const outcome = latest.operation;
    if (outcome?.state === 'failed' && outcome.requestedAt === requestedAt && outcome.error !== null) {
      throw new ApiError(
        isErrorCode(outcome.error.code) ? outcome.error.code : 'provider_unavailable',
        outcome.error.message,
        { sandboxId: id, action, status: latest.status },
      );
    }
    return { value: sandboxView(latest), pending: false };
  }

  /** Polls `read` while `busy` holds, up to api.operationWaitSeconds; the last value read. */
  #waitWhile<T>(read: () => Promise<T>, busy: (value: T) => boolean): Promise<T> {
    return waitWhile(read, busy, this.#deps.config.api.operationWaitSeconds);
  }

  async listFiles(principal: OrgPrincipal, id: string, path: string): Promise<FileInfo[]> {
    const { record, adapter } = await this.#files(principal, id, 'list files');
    if (!isFileSystem(adapter)) throw this.#unsupported(record, adapter, 'list files');
    return adapter.listFiles(record.backendRef ?? '', validPath(path), {
      signal: AbortSignal.timeout(30_000),
    });
  }

  async readFile(principal: OrgPrincipal, id: string, path: string): Promise<Buffer> {
    const { record, adapter } = await this.#files(principal, id, 'read file');
    if (!isFileSystem(adapter)) throw this.#unsupported(record, adapter, 'read file');
    const content = await adapter.readFile(record.backendRef ?? '', validPath(path), {
      signal: AbortSignal.timeout(30_000),
      maxBytes: maxFileBytes,
    });
    if (content.length > maxFileBytes) {
      throw errors.payloadTooLarge(maxFileBytes);
    }
    return Buffer.from(content);
  }

  async writeFile(principal: OrgPrincipal, id: string, path: string, content: Buffer): Promise<void> {
    const { record, adapter } = await this.#files(principal, id, 'write file');
    if (!isFileSystem(adapter)) throw this.#unsupported(record, adapter, 'write file');
    await adapter.writeFile(record.backendRef ?? '', validPath(path), content, {
      signal: AbortSignal.timeout(30_000),
    });
  }

  async exposePort(principal: OrgPrincipal, id: string, port: number): Promise<{ url: string }> {
    const record = await this.#sandboxes.loadForUse(principal, id);
    requireStatus(record, ['running'], 'expose a port');
    const adapter = this.#adapterWith(record, 'ports.expose', 'expose a port');
    if (!isPortExposer(adapter)) throw this.#unsupported(record, adapter, 'expose a port');
    return {
      url: await adapter.exposePort(record.backendRef ?? '', port, { signal: AbortSignal.timeout(30_000) }),
    };
  }

  /**
   * The backend's URL for a port of a sandbox named by id alone: the E2B facade's public port previews
   * (`<port>-<id>.<domain>`, as E2B's are public to whoever has the sandbox's id). Only a running sandbox
   * on a pool that exposes ports has one; any other is the same not_found, so the id is all it reveals.
   */
  /** A live sandbox named by id alone, for a signed URL's check (which then names the caller): not_found otherwise. */
  async findForSignedUrl(id: string): Promise<SandboxRecord> {
    const record = await this.#deps.store.findSandbox(id);
    if (record === undefined || isTerminal(record.status)) throw errors.notFound('sandbox', id);
    return record;
  }

  async previewUrl(id: string, port: number): Promise<{ url: string; record: SandboxRecord }> {
    const record = await this.#deps.store.findSandbox(id);
    if (record === undefined || record.pool === null || record.backendRef === null)
      throw errors.notFound('sandbox', id);
    requireStatus(record, ['running'], 'reach a port of it');
    await this.#deps.pools.ensure(record.pool);
    const adapter = this.#adapterWith(record, 'ports.expose', 'expose a port');
    if (!isPortExposer(adapter)) throw this.#unsupported(record, adapter, 'expose a port');
    const url = await adapter.exposePort(record.backendRef, port, { signal: AbortSignal.timeout(20_000) });
    return { url, record };
  }

  /**
   * A snapshot of a running, stopped or paused sandbox, on its pool, counted against maxSnapshots from
   * the moment it is recorded (status creating, before the backend is called). The operations worker
   * takes it; the API waits up to api.operationWaitSeconds and answers the ready (or failed) record, or
   * the creating one when the backend needs longer.
   */
  async snapshot(
    principal: OrgPrincipal,
    id: string,
    kind: 'disk' | 'memory',
  ): Promise<Accepted<SnapshotRecord>> {
    const record = await this.#sandboxes.load(principal, id);
    const snapshot = await this.#recordSnapshot(principal, record, kind);
    const latest = await this.#waitWhile(
      () => this.#deps.store.getSnapshot(record.orgId, snapshot.id),
      (s) => s?.status === 'creating',
    );
    if (latest === undefined) return { value: snapshot, pending: true };
    if (latest.status === 'failed') {
      // Within the wait: answered as the error. The failed record stays listed, holding no quota.
      throw errors.providerUnavailable(latest.statusMessage ?? 'the snapshot failed on the backend', {
        snapshotId: latest.id,
        status: latest.status,
      });
    }
    return { value: latest, pending: latest.status === 'creating' };
  }

  /** Writes the snapshot record (creating, its quota slot taken) and queues the worker. */
  async #recordSnapshot(
    principal: OrgPrincipal,
    record: SandboxRecord,
    kind: 'disk' | 'memory',
  ): Promise<SnapshotRecord> {
    requireStatus(record, [...snapshotableStatuses], 'snapshot it');
    const adapter = this.#adapterWith(
      record,
      kind === 'disk' ? 'snapshots.disk' : 'snapshots.memory',
      `${kind} snapshot`,
    );
    if (!isSnapshotter(adapter)) throw this.#unsupported(record, adapter, `${kind} snapshot`);
    const at = this.#now().toISOString();
    const snapshot: SnapshotRecord = {
      id: newId('snapshot'),
      orgId: record.orgId,
      projectId: record.projectId,
      sandboxId: record.id,
      pool: record.pool ?? '',
      backendRef: '',
      kind,
      sizeBytes: 0,
      status: 'creating',
      statusMessage: 'being taken on the backend',
      createdAt: at,
      updatedAt: at,
    };
    // Quota: the store takes one of maxSnapshots in the same write, or answers quota_exceeded.
    await this.#deps.store.createSnapshot(snapshot, {
      actor: principal.keyId,
      action: 'snapshot.created',
      target: snapshot.id,
      details: { sandboxId: record.id, kind, pool: snapshot.pool },
    });
    try {
      await this.#deps.queue.send('operations', {
        sandboxId: record.id,
        orgId: record.orgId,
        snapshotId: snapshot.id,
      });
    } catch (error) {
      this.#deps.log.error('could not queue a snapshot; it is marked failed', {
        snapshotId: snapshot.id,
        error: describeError(error),
      });
      await this.#deps.store
        .settleSnapshot(
          snapshot,
          { status: 'failed', statusMessage: 'could not be queued', updatedAt: this.#now().toISOString() },
          {
            actor: actors.system,
            action: 'snapshot.failed',
            target: snapshot.id,
            details: { reason: 'queue' },
          },
        )
        .catch(() => undefined);
      throw errors.providerUnavailable('the snapshot could not be queued; try again');
    }
    return snapshot;
  }

  /**
   * The principal's snapshots, a page at a time. A project-restricted key's pages are filled from the
   * org's listing, and its cursor names only a snapshot it may see (never another project's id).
   */
  async listSnapshots(principal: OrgPrincipal, page: PageRequest): Promise<Page<SnapshotRecord>> {
    const visible = (s: SnapshotRecord) =>
      principal.projectId === null || s.projectId === principal.projectId;
    if (principal.projectId === null) return this.#deps.store.listSnapshots(principal.orgId, page);
    const items: SnapshotRecord[] = [];
    let cursor = page.cursor;
    for (;;) {
      const result = await this.#deps.store.listSnapshots(principal.orgId, { cursor, limit: page.limit });
      for (const snapshot of result.items) {
        if (!visible(snapshot)) continue;
        items.push(snapshot);
        if (items.length === page.limit) return { items, nextCursor: encodeCursor(snapshot.id) };
      }
      if (result.nextCursor === null) return { items, nextCursor: null };
      cursor = result.nextCursor;
    }
  }

  async getSnapshot(principal: OrgPrincipal, id: string): Promise<SnapshotRecord> {
    const snapshot = await this.#deps.store.getSnapshot(principal.orgId, id);
    if (
      snapshot === undefined ||
      (principal.projectId !== null && snapshot.projectId !== principal.projectId)
    ) {
      throw errors.notFound('snapshot', id);
    }
    return snapshot;
  }

  /**
   * Deletes the record (its quota slot comes back) and the backend snapshot. If the backend cannot be
   * reached the record is deleted anyway and the answer names the leftover, as the seeds describe;
   * nothing retries it (a snapshot left behind costs storage, not correctness).
   */
  async deleteSnapshot(
    principal: OrgPrincipal,
    id: string,
  ): Promise<{ id: string; deleted: true; backendDeleted: boolean; note?: string }> {
    const snapshot = await this.getSnapshot(principal, id);
    // A snapshot being taken is left to its worker, unless it has been creating longer than any worker
    // may take (its worker is gone): then it can be deleted, and a worker that still finishes it finds
    // no record and deletes what it made.
    const maxMs = this.#deps.config.scheduler.operationTimeoutSeconds * 1000;
    const since = Date.parse(snapshot.updatedAt ?? snapshot.createdAt);
    if (snapshot.status === 'creating' && this.#now().getTime() - since < maxMs) {
      throw errors.invalidState(
        `snapshot ${id} is still being created; delete it once it is ready or failed (or ${maxMs / 1000} s after it was asked for)`,
        { status: snapshot.status },
      );
    }
    await this.#deps.store.deleteSnapshot(principal.orgId, id, {
      actor: principal.keyId,
      action: 'snapshot.deleted',
      target: id,
      details: { pool: snapshot.pool },
    });
    // A failed snapshot never reached the backend (or was removed from it): only its record existed.
    if (snapshot.status === 'failed') return { id, deleted: true, backendDeleted: true };
    if (snapshot.status === 'creating') {
      return {
        id,
        deleted: true,
        backendDeleted: false,
        note: 'the snapshot was never recorded as taken; if its backend call still finishes, the worker deletes what it made',
      };
    }
    try {
      await this.#deps.pools.sync();
      const adapter = this.#deps.pools.adapterOf(snapshot.pool);
      if (!isSnapshotter(adapter)) throw new Error(`pool ${snapshot.pool} no longer takes snapshots`);
      await adapter.deleteSnapshot(snapshot.backendRef, { signal: AbortSignal.timeout(60_000) });
      return { id, deleted: true, backendDeleted: true };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.#deps.log.warn('snapshot record deleted; its backend snapshot was left behind', {
        snapshotId: id,
        pool: snapshot.pool,
        backendRef: snapshot.backendRef,
        error: describeError(error),
      });
      return {
        id,
        deleted: true,
        backendDeleted: false,
        note: `the record is deleted; the backend snapshot ${snapshot.backendRef} on pool ${snapshot.pool} was left behind: ${reason}`,
      };
    }
  }

  /**
   * Fork: a snapshot (memory if the pool advertises snapshots.memory and the parent runs, else disk),
   * recorded as creating, then at once a child with the parent's template, resources, capabilities,
   * placement, TTL, env and labels, restored from it on the snapshot's pool, through admission and quota
   * like any sandbox. The child waits in the queue until the snapshot is ready (and fails if it fails).
   */
  async fork(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    const parent = await this.#sandboxes.load(principal, id);
    requireStatus(parent, [...snapshotableStatuses], 'fork it');
    const features = this.#deps.pools.featuresOf(parent.pool ?? '');
    if (!features.includes('fork'))
      throw this.#unsupported(parent, this.#deps.pools.adapterOf(parent.pool ?? ''), 'fork');
    const kind = parent.status === 'running' && features.includes('snapshots.memory') ? 'memory' : 'disk';
    const snapshot = await this.#recordSnapshot(principal, parent, kind);
    const { sandbox } = await this.#sandboxes.create(
      principal,
      {
        ...(parent.template !== null && { template: parent.template }),
        resources: parent.resources,
        env: parent.env,
        labels: parent.labels,
        capabilities: parent.capabilities,
        ...(parent.classification !== null && { classification: parent.classification }),
        ttlSeconds: parent.ttlSeconds,
        fromSnapshot: snapshot.id,
        ...(parent.projectId !== null && { projectId: parent.projectId }),
      },
      undefined,
      { forkedFrom: parent.id },
    );
    return sandbox;
  }

  async #files(principal: OrgPrincipal, id: string, operation: string) {
    const record = await this.#sandboxes.loadForUse(principal, id);
    requireStatus(record, ['running'], filePhrases[operation] ?? operation);
    return { record, adapter: this.#adapterWith(record, 'files', operation) };
  }

  /** The pool's adapter, if the pool advertises the feature; 501 with operation, pool and adapter otherwise. */
  #adapterWith(record: SandboxRecord, feature: Feature, operation: string): ExecutionAdapter {
    const pool = record.pool ?? '';
    const adapter = this.#deps.pools.adapterOf(pool);
    // The refreshed view's features: what this container saw at its cold start may be out of date.
    if (!this.#deps.pools.featuresOf(pool).includes(feature))
      throw this.#unsupported(record, adapter, operation);
    return adapter;
  }

  #unsupported(record: SandboxRecord, adapter: ExecutionAdapter, operation: string) {
    return errors.unsupportedOperation(operation, { pool: record.pool, adapter: adapter.info().kind });
  }
}

/** The files operations as a refusal says them ("cannot read a file"). */
const filePhrases: Record<string, string> = {
  'list files': 'list its files',
  'read file': 'read a file',
  'write file': 'write a file',
};

function requireStatus(record: SandboxRecord, allowed: SandboxStatus[], operation: string): void {
  if (!allowed.includes(record.status)) {
    // "sbx_… is stopped: cannot read a file (it must be running)": the status needs no article.
    throw errors.invalidState(
      `${record.id} is ${record.status}: cannot ${operation} (it must be ${allowed.join(' or ')})`,
      {
        status: record.status,
      },
    );
  }
}

/** Paths inside a sandbox are absolute, without NUL bytes. */
export function validPath(path: string): string {
  if (!path.startsWith('/') || path.includes('\0') || path.length > 4096) {
    throw errors.invalidRequest(
      `path must be absolute inside the sandbox, without NUL bytes: ${JSON.stringify(path.slice(0, 100))}`,
      {
        field: 'path',
      },
    );
  }
  // Linux's limit on one name (NAME_MAX): a longer one is the caller's mistake, on every backend.
  const long = path.split('/').find((name) => Buffer.byteLength(name) > maxPathNameBytes);
  if (long !== undefined) {
    throw errors.invalidRequest(
      `path has a name of ${Buffer.byteLength(long)} bytes; a name in a path has at most ${maxPathNameBytes}`,
      { field: 'path' },
    );
  }
  return path;
}

/** The longest name one part of a sandbox path may have, in bytes. */
export const maxPathNameBytes = 255;
