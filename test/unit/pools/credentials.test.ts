import { describe, expect, it } from 'vitest';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import type { Log } from '../../../lib/log.ts';
import { credentialResolver, referencedSecretArns } from '../../../lib/pools/credentials.ts';

const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:daytona-key-AbCdEf';

describe('credential references', () => {
  it('resolves environment references, and names a missing one without any value', async () => {
    process.env.TEST_POOL_TOKEN = 'tok-very-secret';
    const resolve = credentialResolver();
    expect(await resolve({ env: 'TEST_POOL_TOKEN' }, 'p')).toBe('tok-very-secret');
    delete process.env.TEST_POOL_TOKEN;
    await expect(resolve({ env: 'TEST_POOL_TOKEN' }, 'p')).rejects.toThrow(
      'pool p: credentials.env TEST_POOL_TOKEN is not set',
    );
  });

  it('reads Secrets Manager references through the given reader, and refuses them without one', async () => {
    const read = credentialResolver(async (secretArn) =>
      secretArn === arn ? 'sk-from-secrets-manager' : undefined,
    );
    expect(await read({ secretArn: arn }, 'p')).toBe('sk-from-secrets-manager');
    await expect(read({ secretArn: `${arn}x` }, 'p')).rejects.toThrow(/is empty or unreadable/);
    await expect(credentialResolver()({ secretArn: arn }, 'p')).rejects.toThrow(/needs Secrets Manager/);
  });

  it('lists each referenced secret once', () => {
    const config = parseConfig({
      devMode: true,
      pools: [
        { name: 'a', adapter: 'fake', credentials: { secretArn: arn } },
        { name: 'b', adapter: 'fake', credentials: { secretArn: arn } },
        { name: 'c', adapter: 'fake', credentials: { env: 'X' } },
      ],
    });
    expect(referencedSecretArns(config.pools)).toEqual([arn]);
  });

  it('starts a pool whose reference does not resolve without an adapter, logging the reference, not a value', async () => {
    const lines: string[] = [];
    const log: Log = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m, e) => lines.push(`${m} ${JSON.stringify(e)}`),
      error: (m, e) => lines.push(`${m} ${JSON.stringify(e)}`),
    };
    process.env.OTHER_SECRET = 'do-not-print-me';
    const config = parseConfig({
      devMode: true,
      pools: [
        { name: 'broken', adapter: 'fake', credentials: { env: 'MISSING_TOKEN' } },
        { name: 'fine', adapter: 'fake', credentials: { env: 'OTHER_SECRET' } },
      ],
    });
    const pools = await buildPools(config, { log });
    expect(pools.get('broken')?.adapter).toBeUndefined();
    expect(pools.get('fine')?.adapter).toBeDefined();
    expect(lines.join('\n')).toContain('MISSING_TOKEN');
    expect(lines.join('\n')).not.toContain('do-not-print-me');
    delete process.env.OTHER_SECRET;
  });
});
