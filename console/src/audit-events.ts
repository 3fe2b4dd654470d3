import type { DifferentlyClient } from '../../sdk/client.ts';

/** The pages of the org's audit chain the console reads at most (100 events a page). */
const maxPages = 20;

type AuditEvent = Awaited<ReturnType<DifferentlyClient['audit']>>['items'][number];

/** The org's audit events, oldest first, up to maxPages pages; `keep` picks the ones wanted. */
export async function readAudit(
  client: DifferentlyClient,
  keep: (event: AuditEvent) => boolean = () => true,
): Promise<AuditEvent[]> {
  const found: AuditEvent[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await client.audit({ limit: 100, ...(cursor !== undefined && { cursor }) });
    found.push(...answer.items.filter(keep));
    if (answer.nextCursor === null) break;
    cursor = answer.nextCursor;
  }
  return found;
}
