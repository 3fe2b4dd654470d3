import { errors } from '../errors.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxServiceDeps } from './service.ts';

/**
 * A command or process asked to run as the sandbox's superuser (`user: "root"`) goes only to a pool that
 * declares `exec.root`: elsewhere it would run as someone else, so it is refused with the reason.
 */
export function requireRunAsOffered(
  deps: Pick<SandboxServiceDeps, 'pools'>,
  record: SandboxRecord & { pool: string },
  user: 'root' | undefined,
): void {
  if (user === undefined || deps.pools.featuresOf(record.pool).includes('exec.root')) return;
  throw errors.unsupportedOperation('running as root', {
    pool: record.pool,
    feature: 'exec.root',
    reason: `pool ${record.pool} does not offer exec.root: its commands run as the sandbox's default user`,
  });
}
