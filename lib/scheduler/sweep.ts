import { actors } from '../audit/chain.ts';
import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { safeParseJsonText } from '../json-text.ts';
import { describeError, type Log } from '../log.ts';
import { type DeadLetterSource, type QueueName, type WorkQueue, workMessageSchema } from '../queue/port.ts';
import { actionOf } from '../sandboxes/lifecycle-moves.ts';
import { transitionSandbox } from '../sandboxes/transition.ts';
import { wakeWaiters } from '../sandboxes/wake-waiters.ts';
import { type SandboxStatus, settledWithInstance, transitionalStatuses } from '../schemas/sandbox-status.ts';
import type { AuditStore } from '../store/audit/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import type { SnapshotStore } from '../store/snapshots/port.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import { abandonOperation } from './operations-worker.ts';

export interface SweepDeps {
  store: TenancyStore & SandboxStore & SnapshotStore & AuditStore;
  queue: WorkQueue;
  config: Config;
  log: Log;
  deadLetters?: DeadLetterSource | undefined;
  now?: () => Date;
}

export interface SweepReport {
  /** Sandboxes past expiresAt sent to termination (running, stopped and paused alike). */
  expired: number;
  /** Queued sandboxes idle past lostMessageSeconds: a new provision message was sent. */
  requeuedProvisions: number;
  /** Terminations idle past stuckTerminationSeconds: a new terminate message was sent. */
  requeuedTerminations: number;
  /** Provision messages found dead-lettered: their sandboxes failed with the reason. */
  deadLetteredProvisions: number;
  /** Terminate messages found dead-lettered: sent again, a termination must finish. */
  deadLetteredTerminations: number;
  /** Lifecycle calls idle in their transitional status past the operation timeout: sent to the worker again. */
  requeuedOperations: number;
  /** Operation messages found dead-lettered: the call undone (lifecycle) or the snapshot failed. */
  deadLetteredOperations: number;
  /** Changes skipped because the sandbox changed under the sweep (the next pass looks again). */
  skipped: number;
}

const pageSize = 100;
const system = actors.system;

function emptyReport(): SweepReport {
  return {
    expired: 0,
    requeuedProvisions: 0,
    requeuedTerminations: 0,
    deadLetteredProvisions: 0,
    deadLetteredTerminations: 0,
    requeuedOperations: 0,
    deadLetteredOperations: 0,
    skipped: 0,
  };
}

/**
 * The sweep: what a serverless control plane needs beyond the reconciler. Expiry is exact to the
 * sweep's interval and reads the store's due-time index, never DynamoDB TTL deletion.
 */
export async function sweep(deps: SweepDeps): Promise<SweepReport> {
  const now = deps.now?.() ?? new Date();
  const report = emptyReport();

  for (const status of settledWithInstance) {
    await forEachDue(
      deps,
      status,
      now,
      async (record) => {
        const terminating = await transitionSandbox(
          deps.store,
          record,
          'terminating',
          { statusMessage: `expired: its TTL of ${record.ttlSeconds} s ended at ${record.expiresAt}` },
          { now, actor: system, cause: 'ttl' },
        );
        await send(deps, 'terminate', terminating);
        await wakeWaiters(deps, { orgId: record.orgId, pool: record.pool });
        report.expired++;
      },
      report,
    );
  }

  const { lostMessageSeconds, stuckTerminationSeconds, operationTimeoutSeconds } = deps.config.scheduler;
  const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);
  await requeueLost(
    deps,
    now,
    {
      queued: ago(lostMessageSeconds),
      terminating: ago(stuckTerminationSeconds),
      // A transitional status outlasting the worker's own limit lost its message (the API stopped between
      // writing the record and queueing it): the worker is asked again, and its call is idempotent.
      transitional: ago(operationTimeoutSeconds + lostMessageSeconds),
    },
    report,
  );

  if (deps.deadLetters !== undefined) await drainDeadLetters(deps, deps.deadLetters, now, report);
  await linkPendingAudit(deps);
  deps.log.info('sweep done', { ...report });
  return report;
}

/** The last updates before which a waiting sandbox's message counts as lost, per kind of wait. */
interface LostBefore {
  queued: Date;
  terminating: Date;
  transitional: Date;
}

/** Sends again the message of each sandbox idle in its status since before its threshold. */
async function requeueLost(
  deps: SweepDeps,
  now: Date,
  before: LostBefore,
  report: SweepReport,
): Promise<void> {
  await forEachDue(
    deps,
    'queued',
    before.queued,
    async (record) => {
      await touch(deps, record, now);
      await send(deps, 'provision', record);
      report.requeuedProvisions++;
    },
    report,
  );
  await forEachDue(
    deps,
    'terminating',
    before.terminating,
    async (record) => {
      await touch(deps, record, now);
      await send(deps, 'terminate', record);
      report.requeuedTerminations++;
    },
    report,
  );
  for (const status of transitionalStatuses) {
    await forEachDue(
      deps,
      status,
      before.transitional,
      async (record) => {
        await touch(deps, record, now);
        await deps.queue.send('operations', {
          sandboxId: record.id,
          orgId: record.orgId,
          ...(actionOf(record.status) !== undefined && { operation: actionOf(record.status) }),
        });
        report.requeuedOperations++;
      },
      report,
    );
  }
}

/**
 * After a restart that lost the queues' messages (the local runtime's queues live in memory; its table
 * may be on disk): every queued, provisioning, terminating and transitional sandbox is asked for again at once,
 * instead of after the sweep's lost-message thresholds. Every worker's call is idempotent, so a message
 * that did survive only means a second look.
 */
export async function requeueUnfinished(deps: SweepDeps): Promise<SweepReport> {
  const now = deps.now?.() ?? new Date();
  const report = emptyReport();
  // Later than any update (and still a four-digit year: due times compare as ISO strings).
  const everything = new Date('9999-12-31T23:59:59.999Z');
  await requeueLost(
    deps,
    now,
    { queued: everything, terminating: everything, transitional: everything },
    report,
  );
  // A provisioning sandbox's worker died with its message: its own pool is tried first again (Create is
  // idempotent by sandbox id), instead of after the reconciler's provision timeout.
  await forEachDue(
    deps,
    'provisioning',
    everything,
    async (record) => {
      await touch(deps, record, now);
      await send(deps, 'provision', record);
      report.requeuedProvisions++;
    },
    report,
  );
  deps.log.info('unfinished work requeued after a restart', { ...report });
  return report;
}

/** Pages through one status's due sandboxes; a sandbox that changed meanwhile is skipped, not an error. */
async function forEachDue(
  deps: SweepDeps,
  status: SandboxStatus,
  dueBefore: Date,
  act: (record: SandboxRecord) => Promise<void>,
  report: SweepReport,
): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await deps.store.listSandboxesByStatus(
      status,
      { cursor, limit: pageSize },
      { dueBefore: dueBefore.toISOString() },
    );
    for (const record of page.items) {
      try {
        await act(record);
      } catch (error) {
        if (isApiError(error) && (error.code === 'conflict' || error.code === 'invalid_state')) {
          report.skipped++;
          continue;
        }
        deps.log.error('sweep could not act on a sandbox; the next pass tries again', {
          sandboxId: record.id,
          orgId: record.orgId,
          status,
          error: describeError(error),
        });
      }
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

async function touch(deps: SweepDeps, record: SandboxRecord, now: Date): Promise<void> {
  await deps.store.updateSandbox(record, { updatedAt: now.toISOString() });
}

async function send(deps: SweepDeps, queue: QueueName, record: SandboxRecord): Promise<void> {
  await deps.queue.send(queue, { sandboxId: record.id, orgId: record.orgId });
}

async function drainDeadLetters(deps: SweepDeps, source: DeadLetterSource, now: Date, report: SweepReport) {
  for (const queue of ['provision', 'terminate', 'operations'] as const) {
    for (let batch = 0; batch < 10; batch++) {
      const letters = await source.receive(queue, 10);
      if (letters.length === 0) break;
      for (const letter of letters) {
        const parsed = safeParseJsonText(workMessageSchema, letter.body);
        if (!parsed.success) {
          deps.log.error('dead-lettered message is not a work message; dropped', {
            queue,
            body: letter.body.slice(0, 200),
          });
          await letter.ack();
          continue;
        }
        const record = await deps.store.getSandbox(parsed.data.orgId, parsed.data.sandboxId);
        try {
          if (queue === 'operations') {
            await abandonOperation(deps, parsed.data);
            report.deadLetteredOperations++;
          } else if (
            queue === 'provision' &&
            (record?.status === 'queued' || record?.status === 'provisioning')
          ) {
            await transitionSandbox(
              deps.store,
              record,
              'failed',
              {
                statusMessage: `provisioning gave up: its work message was dead-lettered after ${letter.receiveCount} receives (last status: ${record.statusMessage ?? record.status})`,
              },
              { now, actor: system },
            );
            report.deadLetteredProvisions++;
          } else if (queue === 'terminate' && record?.status === 'terminating') {
            await send(deps, 'terminate', record);
            report.deadLetteredTerminations++;
          }
          await letter.ack();
        } catch (error) {
          // Left in the DLQ: the next sweep sees it again.
          deps.log.error('could not handle a dead-lettered message', {
            queue,
            ...parsed.data,
            error: describeError(error),
          });
        }
      }
    }
  }
}

/** Audit records a frozen or crashed process left in an outbox are linked here at the latest. */
async function linkPendingAudit(deps: SweepDeps): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await deps.store.listOrgs({ cursor, limit: pageSize });
    for (const org of page.items) {
      await deps.store.linkAudit(org.id).catch((error: unknown) => {
        deps.log.error('audit linking failed; the next pass tries again', {
          orgId: org.id,
          error: describeError(error),
        });
      });
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
