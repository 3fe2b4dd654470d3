import type { AuditInput } from '../audit/chain.ts';
import { reservationFor } from '../budgets/billing.ts';
import { billable, ratesOf } from '../budgets/prices.ts';
import { isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { SandboxRecord, WarmRecord } from '../store/records.ts';
import type { IdempotencyClaim } from '../store/sandboxes/port.ts';
import type { WarmStore } from '../store/warm/port.ts';
import type { WarmPools } from './pools.ts';
import { type ShapeContext, shapeKey, targetShape } from './shape.ts';

export interface WarmClaimDeps {
  store: WarmStore;
  pools: WarmPools;
  config: ShapeContext;
  log: Log;
}

/**
 * Why a create was not answered from a warm pool (it then takes the normal path: queue, placement,
 * overflow): a restore (snapshots are never warm), no eligible pool keeps a target of its shape, none of
 * those has a ready instance, other creates claimed them first, the ready ones had died, or the org's
 * quota or budget refused the reservation (the normal path then queues it until they allow it).
 */
export type WarmMissReason = 'restore' | 'no-target' | 'empty' | 'taken' | 'lost' | 'quota';

export type WarmAnswer =
  | { kind: 'claimed' | 'replayed'; sandbox: SandboxRecord }
  | { kind: 'miss'; reason: WarmMissReason };

/** How many instances one create asks the backend about before it takes the normal path. */
const maxLivenessChecks = 3;

/** A ready instance's age limit comes from its target; one no target of its shape names is not handed out. */
function maxAgeOf(deps: WarmClaimDeps, pool: string, shape: string): number | undefined {
  const targets = deps.pools.get(pool)?.config.warm ?? [];
  const target = targets.find((entry) => shapeKey(targetShape(entry, deps.config)) === shape);
  return target?.maxAgeSeconds;
}

/**
 * Answers a create from a warm instance, if one matches: the first of `pools` (the permitted, eligible,
 * healthy pools in placement order) keeping a target of the create's shape, and a ready instance of it
 * not older than its target allows, chosen at random among them so that concurrent creates rarely reach
 * for the same one. The instance must answer the backend's Get as running; one that does not is retired.
 * The claim is one conditional write (WarmStore.claimWarm): the instance's record goes, the sandbox is
 * recorded running on it with its reservation. Installations with no target of the shape pay no read.
 */
export async function answerFromWarm(
  deps: WarmClaimDeps,
  draft: SandboxRecord,
  pools: readonly string[],
  audit: (sandbox: SandboxRecord) => AuditInput,
  idempotency: IdempotencyClaim | undefined,
  now: Date,
): Promise<WarmAnswer> {
  if (draft.fromSnapshot !== null) return { kind: 'miss', reason: 'restore' };
  const shape = shapeKey(draft);
  const keeping = pools.flatMap((pool) => {
    const maxAgeSeconds = maxAgeOf(deps, pool, shape);
    return maxAgeSeconds === undefined ? [] : [{ pool, maxAgeMs: maxAgeSeconds * 1000 }];
  });
  if (keeping.length === 0) return { kind: 'miss', reason: 'no-target' };
  let reason: WarmMissReason = 'empty';
  // Each liveness check may wait up to its timeout: a few, so a create stays well inside the API's limit.
  let checks = maxLivenessChecks;
  for (const { pool, maxAgeMs } of keeping) {
    const ready = shuffled(
      (await deps.store.listWarm(pool)).filter(
        (warm) =>
          warm.shape === shape &&
          warm.status === 'ready' &&
          warm.backendRef !== null &&
          now.getTime() - Date.parse(warm.createdAt) < maxAgeMs,
      ),
    );
    for (const warm of ready) {
      if (checks-- <= 0) return { kind: 'miss', reason };
      if (!(await isAlive(deps, warm))) {
        reason = 'lost';
        continue;
      }
      const sandbox = claimedRecord(deps, draft, warm, now);
      try {
        const result = await deps.store.claimWarm(warm, sandbox, audit(sandbox), idempotency);
        if (result.kind !== 'taken') return result;
        reason = 'taken';
      } catch (error) {
        if (isApiError(error) && error.code === 'quota_exceeded') return { kind: 'miss', reason: 'quota' };
        throw error;
      }
    }
  }
  return { kind: 'miss', reason };
}

/** The sandbox a claim records: the create's own record, running on the instance from now. */
function claimedRecord(
  deps: WarmClaimDeps,
  draft: SandboxRecord,
  warm: WarmRecord,
  now: Date,
): SandboxRecord {
  const at = now.toISOString();
  const prices = deps.pools.get(warm.pool)?.config.prices;
  return {
    ...draft,
    id: warm.id,
    status: 'running',
    statusMessage: null,
    pool: warm.pool,
    backendRef: warm.backendRef,
    placement: { pool: warm.pool, rejected: [], decidedAt: at },
    expiresAt: new Date(now.getTime() + draft.ttlSeconds * 1000).toISOString(),
    // Its most cost on the pool's prices, held of the org's (and project's) budget in the claim's write.
    billing: billable(prices)
      ? reservationFor(ratesOf(prices, draft.resources), draft.ttlSeconds, now)
      : null,
    // The control plane keeps its idle policy: the instance was made before anyone named one.
    idle:
      draft.idle === null
        ? null
        : { ...draft.idle, idledAt: null, runningSince: at, enforcedBy: 'control-plane' },
    warm: { claimedAt: at, readyAt: warm.readyAt ?? warm.updatedAt },
  };
}

/**
 * Whether the backend still runs the instance (its Get, within 5 s). One that is gone or not running is
 * retired here: its record is removed, so no create is offered it again and the next refill replaces it;
 * its instance, if any is left, is then unknown to the store and the reconciler deletes it as an orphan.
 */
async function isAlive(deps: WarmClaimDeps, warm: WarmRecord): Promise<boolean> {
  const adapter = deps.pools.get(warm.pool)?.adapter;
  try {
    const instance = await adapter?.get(warm.backendRef ?? '', { signal: AbortSignal.timeout(5000) });
    if (instance?.state === 'running') return true;
  } catch (error) {
    deps.log.warn('warm instance did not answer; retired', {
      pool: warm.pool,
      instance: warm.id,
      error: describeError(error),
    });
  }
  await deps.store.removeWarm(warm);
  return false;
}

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/**
 * One log line per create that could have come warm (installations without a target of its shape log
 * nothing): `warm hit` with the instance's age, or `warm miss` with the reason. The CDK app turns them
 * into the WarmHits and WarmMisses metrics (metric filters on the API's log group).
 */
export function logWarmAnswer(log: Log, answer: WarmAnswer, draft: SandboxRecord, now: Date): void {
  if (answer.kind === 'replayed') return;
  if (answer.kind === 'miss') {
    if (answer.reason !== 'no-target') log.info('warm miss', { reason: answer.reason, orgId: draft.orgId });
    return;
  }
  const { sandbox } = answer;
  log.info('warm hit', {
    pool: sandbox.pool,
    sandboxId: sandbox.id,
    orgId: sandbox.orgId,
    ageSeconds: Math.round((now.getTime() - Date.parse(sandbox.warm?.readyAt ?? now.toISOString())) / 1000),
  });
}
