import type { SandboxRecord } from '../records.ts';
import { type SandboxWriteEffects, sandboxWriteEffects } from '../sandboxes/write-effects.ts';

/**
 * What recording a sandbox claimed from a warm instance moves: its quota and budget reservation like any
 * activation, but no pool slot, because the instance's slot passes to it (both stores execute this).
 */
export function claimEffects(sandbox: SandboxRecord): SandboxWriteEffects {
  const effects = sandboxWriteEffects(undefined, sandbox);
  return { ...effects, poolSlots: effects.poolSlots.filter((slot) => slot.pool !== sandbox.pool) };
}
