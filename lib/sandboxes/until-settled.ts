import { type SandboxStatus, transitionalStatuses } from '../schemas/sandbox-status.ts';
import type { SandboxView } from '../schemas/sandboxes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import type { SandboxService } from './service.ts';

/** The statuses of a sandbox on its way somewhere: being placed, or in a lifecycle move. */
const inFlight = new Set<SandboxStatus>(['queued', 'provisioning', ...transitionalStatuses]);

/**
 * A sandbox once it has settled (running, stopped, paused, failed, or ended meanwhile), or as it is at
 * the deadline: what a caller that wants a usable sandbox from one request waits for (MCP's
 * create_sandbox, the E2B facade's create and connect). Polls the store, backing off from 50 to 500 ms.
 */
export async function untilSettled(
  sandboxes: Pick<SandboxService, 'get'>,
  principal: OrgPrincipal,
  id: string,
  waitMs: number,
): Promise<SandboxView> {
  const deadline = Date.now() + waitMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    const sandbox = await sandboxes.get(principal, id);
    if (!inFlight.has(sandbox.status) || Date.now() + delay > deadline) return sandbox;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
