import {
  type ExecutionAdapter,
  type Feature,
  type FileInfo,
  isFileSystem,
  isLifecycle,
  isPauser,
  isPortExposer,
  isSnapshotter,
} from './adapter/contract.ts';
import type { Principal } from './auth.ts';
import { errors, isApiError } from './errors.ts';
import { newId } from './ids.ts';
import { describeError } from './log.ts';
import { sandboxView, transitionSandbox } from './sandbox-records.ts';
import type { SandboxStatus } from './sandbox-state.ts';
import { retryOnConflict, type SandboxService, type SandboxServiceDeps } from './sandboxes.ts';
import { wakeWaiters } from './scheduler/wake.ts';
import type { SandboxView } from './schemas/sandboxes.ts';
import type { Page, PageRequest } from './store/port.ts';
import type { SandboxRecord, SnapshotRecord } from './store/records.ts';

type OrgPrincipal = Extract<Principal, { kind: 'org' }>;

/** File content through the API: Lambda's 6 MB payload, less base64's third, leaves room for 4 MiB. */
export const maxFileBytes = 4 * 1024 * 1024;

export type LifecycleAction = 'stop' | 'start' | 'pause' | 'resume';

const lifecycleMoves: Record<LifecycleAction, { from: SandboxStatus; to: SandboxStatus; feature: Feature }> =
  {
    stop: { from: 'running', to: 'stopped', feature: 'lifecycle.stop-start' },
    start: { from: 'stopped', to: 'running', feature: 'lifecycle.stop-start' },
    pause: { from: 'running', to: 'paused', feature: 'lifecycle.pause-resume' },
    resume: { from: 'paused', to: 'running', feature: 'lifecycle.pause-resume' },
  };

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
   * stop keeps the disk and releases cpu and memory; start re-reserves them first (429 when they no longer
   * fit) and gives them back if the backend then fails; pause keeps everything; resume restores.
   */
  async lifecycle(principal: OrgPrincipal, id: string, action: LifecycleAction): Promise<SandboxView> {
    const move = lifecycleMoves[action];
    const record = await this.#sandboxes.load(principal, id);
    requireStatus(record, [move.from], action);
    const adapter = this.#adapterWith(record, move.feature, action);
    const call = (ref: string) => {
      const options = { signal: AbortSignal.timeout(120_000) };
      if (action === 'stop' && isLifecycle(adapter)) return adapter.stop(ref, options);
      if (action === 'start' && isLifecycle(adapter)) return adapter.start(ref, options);
      if (action === 'pause' && isPauser(adapter)) return adapter.pause(ref, options);
      if (action === 'resume' && isPauser(adapter)) return adapter.resume(ref, options);
      throw this.#unsupported(record, adapter, action);
    };
    const ref = record.backendRef ?? '';
    // A worker's write between our read and our write (a progress note, the reconciler following state)
    // does not undo a lifecycle call: the move is applied to the newer version if the status is unchanged.
    const transition = (from: SandboxRecord, to: SandboxStatus, message: string | null) => {
      let current = from;
      return retryOnConflict(async () => {
        try {
          return await transitionSandbox(
            this.#deps.store,
            current,
            to,
            { statusMessage: message },
            { now: this.#now(), actor: principal.keyId },
          );
        } catch (error) {
          if (isApiError(error) && error.code === 'conflict') {
            const latest = await this.#sandboxes.load(principal, id);
            if (latest.status !== from.status) requireStatus(latest, [from.status], action);
            current = latest;
          }
          throw error;
        }
      });
    };
    if (action === 'start') {
      // Reserve before asking the backend, so two starts cannot both fit one quota.
      const reserved = await transition(record, 'running', null);
      try {
        await call(ref);
      } catch (error) {
        await transition(reserved, 'stopped', 'start failed on the backend').catch((rollback: unknown) =>
          this.#deps.log.error('could not give back the reservation of a failed start', {
            sandboxId: id,
            error: describeError(rollback),
          }),
        );
        throw error;
      }
      return sandboxView(reserved);
    }
    await call(ref);
    const moved = await transition(record, move.to, action === 'stop' ? 'stopped by request' : null);
    if (action === 'stop') await wakeWaiters(this.#deps, { orgId: record.orgId, pool: record.pool });
    return sandboxView(moved);
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
    const record = await this.#sandboxes.load(principal, id);
    requireStatus(record, ['running'], 'expose a port');
    const adapter = this.#adapterWith(record, 'ports.expose', 'expose a port');
    if (!isPortExposer(adapter)) throw this.#unsupported(record, adapter, 'expose a port');
    return {
      url: await adapter.exposePort(record.backendRef ?? '', port, { signal: AbortSignal.timeout(30_000) }),
    };
  }

  /**
   * A snapshot of a running, stopped or paused sandbox, on its pool, counted against maxSnapshots. If the
   * record cannot be written (quota taken meanwhile), the backend snapshot is deleted again: no ready
   * record without a snapshot, no snapshot without a record or a reserved slot.
   */
  async snapshot(principal: OrgPrincipal, id: string, kind: 'disk' | 'memory'): Promise<SnapshotRecord> {
    const record = await this.#sandboxes.load(principal, id);
    requireStatus(record, ['running', 'stopped', 'paused'], 'snapshot');
    const adapter = this.#adapterWith(
      record,
      kind === 'disk' ? 'snapshots.disk' : 'snapshots.memory',
      `${kind} snapshot`,
    );
    if (!isSnapshotter(adapter)) throw this.#unsupported(record, adapter, `${kind} snapshot`);
    const org = await this.#deps.store.getOrg(record.orgId);
    const usage = await this.#deps.store.getUsage(record.orgId);
    if (org !== undefined && usage.snapshots >= org.quota.maxSnapshots) {
      throw errors.quotaExceeded(`the org's snapshot quota of ${org.quota.maxSnapshots} is used up`, {
        field: 'snapshots',
        limit: org.quota.maxSnapshots,
      });
    }
    const taken = await adapter.snapshot(record.backendRef ?? '', kind, {
      signal: AbortSignal.timeout(600_000),
    });
    const snapshot: SnapshotRecord = {
      id: newId('snapshot'),
      orgId: record.orgId,
      projectId: record.projectId,
      sandboxId: record.id,
      pool: record.pool ?? '',
      backendRef: taken.ref,
      kind: taken.kind,
      sizeBytes: taken.sizeBytes,
      status: 'ready',
      createdAt: this.#now().toISOString(),
    };
    try {
      await this.#deps.store.createSnapshot(snapshot, {
        actor: principal.keyId,
        action: 'snapshot.created',
        target: snapshot.id,
        details: { sandboxId: record.id, kind: snapshot.kind, pool: snapshot.pool },
      });
    } catch (error) {
      await adapter.deleteSnapshot(taken.ref).catch(() => undefined);
      throw error;
    }
    return snapshot;
  }

  async listSnapshots(principal: OrgPrincipal, page: PageRequest): Promise<Page<SnapshotRecord>> {
    const result = await this.#deps.store.listSnapshots(principal.orgId, page);
    const visible = result.items.filter(
      (s) => principal.projectId === null || s.projectId === principal.projectId,
    );
    return { items: visible, nextCursor: result.nextCursor };
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
    await this.#deps.store.deleteSnapshot(principal.orgId, id, {
      actor: principal.keyId,
      action: 'snapshot.deleted',
      target: id,
      details: { pool: snapshot.pool },
    });
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
   * Fork: a snapshot (memory if the pool advertises snapshots.memory and the parent runs, else disk), then
   * a child with the parent's template, resources, capabilities, placement, TTL, env and labels, pinned
   * to the snapshot's pool, through admission and quota like any sandbox.
   */
  async fork(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    const parent = await this.#sandboxes.load(principal, id);
    requireStatus(parent, ['running', 'stopped', 'paused'], 'fork');
    const features = this.#deps.pools.get(parent.pool ?? '')?.config.features ?? [];
    if (!features.includes('fork'))
      throw this.#unsupported(parent, this.#deps.pools.adapterOf(parent.pool ?? ''), 'fork');
    const kind = parent.status === 'running' && features.includes('snapshots.memory') ? 'memory' : 'disk';
    const snapshot = await this.snapshot(principal, id, kind);
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
    const record = await this.#sandboxes.load(principal, id);
    requireStatus(record, ['running'], operation);
    return { record, adapter: this.#adapterWith(record, 'files', operation) };
  }

  /** The pool's adapter, if the pool advertises the feature; 501 with operation, pool and adapter otherwise. */
  #adapterWith(record: SandboxRecord, feature: Feature, operation: string): ExecutionAdapter {
    const pool = record.pool ?? '';
    const adapter = this.#deps.pools.adapterOf(pool);
    const features = this.#deps.pools.get(pool)?.config.features ?? [];
    if (!features.includes(feature)) throw this.#unsupported(record, adapter, operation);
    return adapter;
  }

  #unsupported(record: SandboxRecord, adapter: ExecutionAdapter, operation: string) {
    return errors.unsupportedOperation(operation, { pool: record.pool, adapter: adapter.info().kind });
  }
}

function requireStatus(record: SandboxRecord, allowed: SandboxStatus[], operation: string): void {
  if (!allowed.includes(record.status)) {
    throw errors.invalidState(
      `cannot ${operation} a ${record.status} sandbox (needs ${allowed.join(' or ')})`,
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
  return path;
}
