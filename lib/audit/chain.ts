import { createHash } from 'node:crypto';

/** What a change records about itself; the store adds the chain fields. */
export interface AuditInput {
  /** A key id, `admin`, or `system` for the control plane's own moves. */
  /** A key id, `admin`, or one of the control plane's own actors (`actors`). */
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
}

export interface AuditEvent extends AuditInput {
  orgId: string;
  seq: number;
  at: string;
  prevHash: string;
  hash: string;
}

export interface ChainHead {
  seq: number;
  hash: string;
}

/** The head of an empty chain: event 1's prevHash. */
export const genesisHead: ChainHead = { seq: 0, hash: '0'.repeat(64) };

/**
 * JSON with object keys sorted at every depth: the same event always encodes to the same bytes,
 * whatever order its fields were built or stored in.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function auditHash(event: Omit<AuditEvent, 'hash'>): string {
  const { orgId, seq, at, actor, action, target, details, prevHash } = event;
  return createHash('sha256')
    .update(canonicalJson({ orgId, seq, at, actor, action, target, details, prevHash }))
    .digest('hex');
}

/** The next event of a chain whose head is `head`. */
export function chainEvent(orgId: string, head: ChainHead, input: AuditInput, at: string): AuditEvent {
  const unsealed = { ...input, orgId, seq: head.seq + 1, at, prevHash: head.hash };
  return { ...unsealed, hash: auditHash(unsealed) };
}

export interface ChainVerification {
  ok: boolean;
  checked: number;
  firstBroken?: { seq: number; reason: string };
}

/**
 * Walks a chain in order and reports the first broken link: an event whose hash does not match its
 * content, whose prevHash is not the previous event's hash, or whose seq skips or repeats. `head` is the
 * stored chain head: events deleted from the end are caught by comparing against it.
 */
export async function verifyChain(
  events: AsyncIterable<AuditEvent>,
  head: ChainHead,
): Promise<ChainVerification> {
  let previous = genesisHead;
  let checked = 0;
  for await (const event of events) {
    const expectedSeq = previous.seq + 1;
    if (event.seq !== expectedSeq) {
      return broken(checked, expectedSeq, `expected seq ${expectedSeq}, found ${event.seq}`);
    }
    if (event.prevHash !== previous.hash)
      return broken(checked, event.seq, 'prevHash does not match the previous event');
    if (auditHash(event) !== event.hash)
      return broken(checked, event.seq, 'hash does not match the event content');
    previous = { seq: event.seq, hash: event.hash };
    checked++;
  }
  if (previous.seq !== head.seq || previous.hash !== head.hash) {
    return broken(
      checked,
      previous.seq + 1,
      `the chain ends at seq ${previous.seq} but its head is at seq ${head.seq}`,
    );
  }
  return { ok: true, checked };
}

function broken(checked: number, seq: number, reason: string): ChainVerification {
  return { ok: false, checked, firstBroken: { seq, reason } };
}

/** The control plane's own actors in audit events: its workers and schedules, and the reconciler. */
export const actors = {
  system: 'system',
  reconciler: 'reconciler',
} as const;
