import { actors } from '../audit/chain.ts';
import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import { done, retryAfter, type WorkOutcome } from '../queue/outcome.ts';
import type { WorkMessage } from '../queue/port.ts';
import { transitionSandbox } from '../sandboxes/transition.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import { terminateBackoffSeconds } from './backoff.ts';
import { noteProgress } from './heartbeat.ts';

export interface TerminateDeps {
  store: SandboxStore;
  pools: PoolRegistry;
  config: Config;
  log: Log;
  now?: () => Date;
}

/**
 * Handles one terminate message: Delete the backend instance (a missing one is success), then mark the
 * sandbox terminated. A pool that is gone or has no adapter in this build ends the termination with a
 * note instead of retrying forever (the seeds' E0.22).
 */
export async function terminateSandbox(
  deps: TerminateDeps,
  message: WorkMessage,
  receiveCount: number,
): Promise<WorkOutcome> {
  const now = deps.now ?? (() => new Date());
  const record = await deps.store.getSandbox(message.orgId, message.sandboxId);
  if (record === undefined || record.status !== 'terminating') return done;
  let note = 'terminated';
  if (record.backendRef !== null && record.pool !== null) {
    // A pool unknown to this container may have been added through the admin API since it started:
    // look again before concluding it no longer exists (and leaving its instance behind).
    if (deps.pools.get(record.pool) === undefined) await deps.pools.sync(true);
    const pool = deps.pools.get(record.pool);
    if (pool?.adapter === undefined) {
      note =
        pool === undefined
          ? `terminated; pool ${record.pool} no longer exists, backend instance ${record.backendRef} was not deleted`
          : `terminated; pool ${record.pool} has no adapter in this build, backend instance ${record.backendRef} was not deleted`;
    } else {
      try {
        await pool.adapter.delete(record.backendRef, {
          signal: AbortSignal.timeout(deps.config.scheduler.terminateTimeoutSeconds * 1000),
        });
      } catch (error) {
        if (!isApiError(error) || error.code !== 'not_found') {
          const delaySeconds = terminateBackoffSeconds(receiveCount);
          const reason = error instanceof Error ? error.message : String(error);
          await noteProgress(deps.store, record, `delete failed, retrying: ${reason}`, now()).catch(
            () => undefined,
          );
          deps.log.warn('adapter delete failed; will retry', {
            sandboxId: record.id,
            orgId: record.orgId,
            pool: record.pool,
            delaySeconds,
            error: describeError(error),
          });
          return retryAfter(delaySeconds);
        }
      }
    }
  }
  await transitionSandbox(
    deps.store,
    record,
    'terminated',
    { statusMessage: note },
    { now: now(), actor: actors.system },
  );
  deps.log.info('sandbox terminated', { sandboxId: record.id, orgId: record.orgId, pool: record.pool });
  return done;
}
