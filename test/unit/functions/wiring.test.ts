import { afterEach, describe, expect, it, vi } from 'vitest';
import { containerFromEnv } from '../../../functions/wiring.ts';

describe('containerFromEnv', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('builds the memory store, imported only when DIFFERENTLY_STORE=memory asks for it', async () => {
    for (const [name, value] of Object.entries({
      DIFFERENTLY_STORE: 'memory',
      DIFFERENTLY_CONFIG_JSON: JSON.stringify({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
      DIFFERENTLY_ADMIN_KEY: 'an-admin-key-long-enough',
      DIFFERENTLY_PROVISION_QUEUE_URL: 'http://127.0.0.1:9/provision',
      DIFFERENTLY_TERMINATE_QUEUE_URL: 'http://127.0.0.1:9/terminate',
      DIFFERENTLY_OPERATIONS_QUEUE_URL: 'http://127.0.0.1:9/operations',
      DIFFERENTLY_WEBHOOKS_QUEUE_URL: 'http://127.0.0.1:9/webhooks',
    }))
      vi.stubEnv(name, value);
    const { store, pools } = await containerFromEnv();
    // rawAudit is the memory store's own test hook: no DynamoDB store has it.
    expect('rawAudit' in store).toBe(true);
    expect(await store.getOrg('org_missing')).toBeUndefined();
    expect(pools.list().map((pool) => pool.config.name)).toEqual(['fake']);
  });
});
