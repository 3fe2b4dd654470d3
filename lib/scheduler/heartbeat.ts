import type { SandboxRecord } from '../store/records.ts';
import type { SandboxPatch, SandboxStore } from '../store/sandboxes/port.ts';

/**
 * Work that is alive touches its record at most this often, so the sweep can tell a waiting sandbox
 * (whose message will come back) from one whose message was lost, without a write on every retry.
 */
export const heartbeatSeconds = 60;

/** Records a new status message, or refreshes updatedAt when the same one is older than a heartbeat. */
export async function noteProgress(
  store: SandboxStore,
  record: SandboxRecord,
  message: string,
  now: Date,
  patch: SandboxPatch = {},
): Promise<void> {
  const age = now.getTime() - Date.parse(record.updatedAt);
  const same = Object.entries(patch).every(([name, value]) => record[name as keyof SandboxRecord] === value);
  if (record.statusMessage === message && same && age < heartbeatSeconds * 1000) return;
  await store.updateSandbox(record, { ...patch, statusMessage: message, updatedAt: now.toISOString() });
}
