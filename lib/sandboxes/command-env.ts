import type { SandboxRecord } from '../store/records.ts';

/**
 * The environment a command runs with. A sandbox built for its create has its env on the backend from
 * Create; one that claimed a warm instance (made before any tenant named an env) gets it here, with every
 * command, on every backend alike: the instance itself never holds it, so nothing of one tenant's env can
 * be on an instance another claims (docs/placement.md, "Warm pools"). The command's own env wins.
 */
export function commandEnv(
  record: Pick<SandboxRecord, 'env' | 'warm'>,
  env: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (record.warm === null || Object.keys(record.env).length === 0) return env;
  return { ...record.env, ...env };
}
