import type { AuditEvent } from '../audit/chain.ts';
import { sandboxStatuses } from '../schemas/sandbox-status.ts';
import { type EventCause, eventCauses } from '../schemas/webhooks.ts';

/** One lifecycle event, published as detail-type `differently.sandbox.<status>` on the event bus. */
export interface LifecycleEvent {
  detailType: string;
  detail: {
    sandboxId: string;
    orgId: string;
    projectId: string | null;
    pool: string | null;
    status: string;
    from: string | null;
    reason: string | null;
    /** What caused it: a caller (`user`), or the TTL, the idle policy, a budget, the reconciler, the backend. */
    cause: EventCause;
    at: string;
    /** The audit event it comes from: consumers can de-duplicate on (orgId, seq). */
    seq: number;
  };
}

export interface EventPublisher {
  /** Publishes all or throws: a failure leaves the events to be published again (at least once). */
  publish(events: LifecycleEvent[]): Promise<void>;
}

const statuses: ReadonlySet<string> = new Set(sandboxStatuses);

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

const causes: ReadonlySet<string> = new Set(eventCauses);

/** A transition records its cause when it is not the caller's request (or its progress): else `user`. */
function causeOf(value: unknown): EventCause {
  return typeof value === 'string' && causes.has(value) ? (value as EventCause) : 'user';
}

/** Publishes to each publisher; fails if any fails, so the batch is published again (at least once). */
export function allPublishers(...publishers: EventPublisher[]): EventPublisher {
  return {
    async publish(events) {
      await Promise.all(publishers.map((publisher) => publisher.publish(events)));
    },
  };
}

/**
 * The lifecycle events in a batch of audit events: every sandbox status change (`sandbox.<status>`, and
 * `sandbox.created` as `queued`, or as `running` when a warm instance answered it). Derived from committed audit records only, so nothing is published
 * for a change that did not happen, and nothing that happened is missed.
 */
export function lifecycleEventsOf(events: readonly AuditEvent[]): LifecycleEvent[] {
  const out: LifecycleEvent[] = [];
  for (const event of events) {
    const [kind, verb] = event.action.split('.');
    if (kind !== 'sandbox' || verb === undefined) continue;
    // A create answered from a warm instance is running from its first record (details.status says so).
    const status = verb === 'created' ? (event.details.status === 'running' ? 'running' : 'queued') : verb;
    if (!statuses.has(status)) continue;
    out.push({
      detailType: `differently.sandbox.${status}`,
      detail: {
        sandboxId: event.target,
        orgId: event.orgId,
        projectId: text(event.details.projectId),
        pool: text(event.details.pool),
        status,
        from: text(event.details.from),
        reason: text(event.details.reason),
        cause: causeOf(event.details.cause),
        at: event.at,
        seq: event.seq,
      },
    });
  }
  return out;
}

/** The store hook that turns each batch of chained audit events into published lifecycle events. */
export function publishLifecycleEvents(publisher: EventPublisher): (events: AuditEvent[]) => Promise<void> {
  return async (events) => {
    const lifecycle = lifecycleEventsOf(events);
    if (lifecycle.length > 0) await publisher.publish(lifecycle);
  };
}
