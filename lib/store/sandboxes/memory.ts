import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import type { SandboxStatus } from '../../schemas/sandbox-status.ts';
import { idempotencyMismatch, waitingExceeded } from '../errors.ts';
import { copy, type MemoryState, paginate } from '../memory-state.ts';
import type { Page, PageRequest } from '../page.ts';
import type { SandboxRecord } from '../records.ts';
import type { SandboxStore } from './port.ts';
import {
  type CreateSandboxResult,
  type IdempotencyClaim,
  isWaiting,
  type SandboxFilter,
  type SandboxPatch,
  type UpdateSandboxOptions,
} from './port.ts';
import { dueKeyOf, indexedStatuses } from './status-index.ts';
import { sandboxWriteEffects } from './write-effects.ts';

/**
 * The first sandbox of an Idempotency-Key still in its window (a repeat with another body is a
 * conflict); undefined when the key is new, expired or absent.
 */
export function replayOf(
  s: MemoryState,
  orgId: string,
  idempotency: IdempotencyClaim | undefined,
): SandboxRecord | undefined {
  if (idempotency === undefined) return undefined;
  const existing = s.idempotency.get(`${orgId}/${idempotency.key}`);
  if (existing === undefined || existing.expiresAt <= s.now().toISOString()) return undefined;
  if (existing.requestHash !== idempotency.requestHash) throw idempotencyMismatch(idempotency.key);
  return copy(s.sandboxes.get(existing.sandboxId));
}

/** Keeps an Idempotency-Key for the sandbox it created. */
export function remember(
  s: MemoryState,
  sandbox: SandboxRecord,
  idempotency: IdempotencyClaim | undefined,
): void {
  if (idempotency === undefined) return;
  s.idempotency.set(`${sandbox.orgId}/${idempotency.key}`, {
    requestHash: idempotency.requestHash,
    sandboxId: sandbox.id,
    expiresAt: idempotency.expiresAt,
  });
}

/** The sandboxes aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memorySandboxes(s: MemoryState): SandboxStore {
  const part: SandboxStore = {
    async createSandbox(
      sandbox: SandboxRecord,
      audit: AuditInput,
      idempotency?: IdempotencyClaim,
      options: { maxWaiting?: number } = {},
    ): Promise<CreateSandboxResult> {
      if (!s.orgs.has(sandbox.orgId)) throw errors.notFound('org', sandbox.orgId);
      const first = replayOf(s, sandbox.orgId, idempotency);
      if (first !== undefined) return { sandbox: first, replayed: true };
      if (options.maxWaiting !== undefined) {
        let waiting = 0;
        for (const other of s.sandboxes.values())
          if (other.orgId === sandbox.orgId && isWaiting(other.status)) waiting++;
        if (waiting >= options.maxWaiting) throw waitingExceeded(options.maxWaiting);
      }
      if (s.sandboxes.has(sandbox.id)) throw errors.conflict(`sandbox ${sandbox.id} already exists`);
      s.applyEffects(sandboxWriteEffects(undefined, sandbox));
      remember(s, sandbox, idempotency);
      s.sandboxes.set(sandbox.id, structuredClone(sandbox));
      s.append(sandbox.orgId, audit);
      return { sandbox: structuredClone(sandbox), replayed: false };
    },

    async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
      const sandbox = s.sandboxes.get(id);
      return sandbox?.orgId === orgId ? structuredClone(sandbox) : undefined;
    },

    async listQueued(orgId: string, limit: number): Promise<SandboxRecord[]> {
      return [...s.sandboxes.values()]
        .filter((sandbox) => sandbox.orgId === orgId && sandbox.status === 'queued')
        .sort((a, b) => (dueKeyOf(a) < dueKeyOf(b) ? -1 : 1))
        .slice(0, limit)
        .map((sandbox) => structuredClone(sandbox));
    },

    async listSandboxes(
      orgId: string,
      filter: SandboxFilter,
      page: PageRequest,
    ): Promise<Page<SandboxRecord>> {
      const matches = [...s.sandboxes.values()].filter(
        (sandbox) =>
          sandbox.orgId === orgId &&
          (filter.status === undefined || sandbox.status === filter.status) &&
          (filter.projectId === undefined || sandbox.projectId === filter.projectId) &&
          Object.entries(filter.labels ?? {}).every(([key, value]) => sandbox.labels[key] === value),
      );
      return paginate(matches, page);
    },

    async listSandboxesByStatus(
      status: SandboxStatus,
      page: PageRequest,
      options: { dueBefore?: string } = {},
    ): Promise<Page<SandboxRecord>> {
      if (!indexedStatuses.has(status)) return { items: [], nextCursor: null };
      const before = options.dueBefore;
      const matches = [...s.sandboxes.values()].filter(
        (sandbox) => sandbox.status === status && (before === undefined || dueKeyOf(sandbox) < before),
      );
      return paginate(matches, page, dueKeyOf);
    },

    async listSandboxesByPool(pool: string, page: PageRequest): Promise<Page<SandboxRecord>> {
      const matches = [...s.sandboxes.values()].filter(
        (sandbox) => sandbox.pool === pool && indexedStatuses.has(sandbox.status),
      );
      return paginate(matches, page);
    },

    async findSandbox(id: string): Promise<SandboxRecord | undefined> {
      return copy(s.sandboxes.get(id));
    },

    async updateSandbox(
      current: SandboxRecord,
      patch: SandboxPatch,
      options: UpdateSandboxOptions = {},
    ): Promise<SandboxRecord> {
      const stored = s.sandboxes.get(current.id);
      if (stored === undefined || stored.orgId !== current.orgId)
        throw errors.notFound('sandbox', current.id);
      if (stored.version !== current.version || stored.status !== current.status) {
        throw errors.conflict(`sandbox ${current.id} changed since it was read`, {
          expected: { version: current.version, status: current.status },
          actual: { version: stored.version, status: stored.status },
        });
      }
      const next: SandboxRecord = { ...stored, ...structuredClone(patch), version: stored.version + 1 };
      s.applyEffects(sandboxWriteEffects(stored, next, options.poolLimit));
      s.sandboxes.set(next.id, next);
      if (options.audit !== undefined) s.append(next.orgId, options.audit);
      return structuredClone(next);
    },

    async touchSandbox(orgId: string, id: string, at: string): Promise<string | undefined> {
      const key = `${orgId}/${id}`;
      const last = s.activity.get(key);
      if (last !== undefined && last >= at) return at;
      s.activity.set(key, at);
      return last;
    },

    async lastActivity(orgId: string, id: string): Promise<string | undefined> {
      return s.activity.get(`${orgId}/${id}`);
    },
  };
  return part;
}
