import { type PoolConfig, runtimePoolSecretName } from '../config.ts';
import { errors } from '../errors.ts';

export type CredentialRef = NonNullable<PoolConfig['credentials']>;

/** Resolves a pool's credential reference to its value. Values never appear in records, responses or logs. */
export type CredentialResolver = (ref: CredentialRef, pool: string) => Promise<string>;

/**
 * Environment-variable references resolve from the process environment; Secrets Manager references go
 * to `readSecret` (Powertools' cached getSecret in Lambda). A reference that does not resolve fails with
 * the pool and the reference named, never the value.
 */
export function credentialResolver(
  readSecret?: (arn: string) => Promise<string | undefined>,
  /** Where `{env}` references are read: this process's environment unless a caller (the CLI) has its own. */
  environment: Record<string, string | undefined> = process.env,
): CredentialResolver {
  return async (ref, pool) => {
    if ('env' in ref) {
      const value = environment[ref.env];
      if (value === undefined || value === '') {
        throw errors.invalidRequest(`pool ${pool}: credentials.env ${ref.env} is not set`, {
          pool,
          env: ref.env,
        });
      }
      return value;
    }
    if (readSecret === undefined) {
      throw errors.invalidRequest(`pool ${pool}: credentials.secretArn needs Secrets Manager (AWS only)`, {
        pool,
        secretArn: ref.secretArn,
      });
    }
    let value: string | undefined;
    try {
      value = await readSecret(ref.secretArn);
    } catch (error) {
      // Not found, access denied (outside the runtime-pool prefix), throttled: the reference is named, the cause logged upstream.
      throw errors.invalidRequest(
        `pool ${pool}: the secret ${ref.secretArn} could not be read (${(error as Error).name}); pools added at runtime keep theirs under ${runtimePoolSecretPrefix}`,
        { pool, secretArn: ref.secretArn },
      );
    }
    if (value === undefined || value === '') {
      throw errors.invalidRequest(`pool ${pool}: the secret ${ref.secretArn} is empty or unreadable`, {
        pool,
        secretArn: ref.secretArn,
      });
    }
    return value;
  };
}

/** The secret-name prefix the functions may read: where credentials of pools added through the admin API live. */
export const runtimePoolSecretPrefix = runtimePoolSecretName;

/** The Secrets Manager ARNs a config references: exactly what the functions are granted to read. */
export function referencedSecretArns(pools: readonly PoolConfig[]): string[] {
  const arns = pools.flatMap((pool) =>
    pool.credentials !== undefined && 'secretArn' in pool.credentials ? [pool.credentials.secretArn] : [],
  );
  return [...new Set(arns)];
}
