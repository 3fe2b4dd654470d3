import type { AuditInput } from '../../audit/chain.ts';
import type { SandboxRecord, WarmRecord } from '../records.ts';
import type { IdempotencyClaim } from '../sandboxes/port.ts';

/**
 * The warm instances aggregate (lib/warm/): records of instances made ahead of creates, per pool. Each
 * holds a slot of its pool from the moment it is recorded, so warm instances and sandboxes share the
 * pool's maxConcurrency; a claim hands that slot to the sandbox it becomes.
 */
export interface WarmStore {
  /** Records a warm instance about to be created, taking a slot of its pool (within `poolLimit`, 0: none). */
  putWarm(record: WarmRecord, options?: { poolLimit?: number }): Promise<void>;

  /** Applies `patch` if the record is still the version read (conflict otherwise); returns the result. */
  updateWarm(
    current: WarmRecord,
    patch: Partial<Pick<WarmRecord, 'status' | 'backendRef' | 'readyAt' | 'updatedAt'>>,
  ): Promise<WarmRecord>;

  /** Removes it and gives its slot back, if it is still the version read; false when it was claimed or changed. */
  removeWarm(current: WarmRecord): Promise<boolean>;

  /** The pool's warm instances, oldest first. */
  listWarm(pool: string): Promise<WarmRecord[]>;

  /**
   * A create answered from a warm instance: in one write the instance's record is removed (only if it is
   * still ready and the version read), the sandbox is recorded (running, on the instance) with its quota
   * and budget reservation and its audit event, and its Idempotency-Key is kept. The pool slot passes from
   * the instance to the sandbox. `taken`: another create claimed it first (or it changed), nothing was
   * written. An Idempotency-Key already used with the same body replays the first sandbox. The org's
   * quota or budget refusing the reservation throws quota_exceeded, as an activation does.
   */
  claimWarm(
    warm: WarmRecord,
    sandbox: SandboxRecord,
    audit: AuditInput,
    idempotency?: IdempotencyClaim,
  ): Promise<WarmClaimResult>;
}

export type WarmClaimResult =
  | { kind: 'claimed'; sandbox: SandboxRecord }
  | { kind: 'replayed'; sandbox: SandboxRecord }
  | { kind: 'taken' };
