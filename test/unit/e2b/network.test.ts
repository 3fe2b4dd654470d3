import { describe, expect, it } from 'vitest';
import { e2bNetworkInfo, e2bNetworkPolicy, refusedNetworkOptions } from '../../../lib/e2b/network.ts';

describe("E2B's egress options", () => {
  it('deny all traffic: egress deny, or an allow-list of allowOut (allowed entries win)', () => {
    expect(e2bNetworkPolicy({ allow_internet_access: false })).toEqual({ policy: { egress: 'deny' } });
    expect(e2bNetworkPolicy({ network: { denyOut: ['0.0.0.0/0'] } })).toEqual({ policy: { egress: 'deny' } });
    expect(
      e2bNetworkPolicy({ allow_internet_access: false, network: { allowOut: ['pypi.org', '8.8.8.8/32'] } }),
    ).toEqual({ policy: { egress: 'allowlist', allow: ['pypi.org', '8.8.8.8/32'] } });
  });

  it('deny nothing: no policy of its own (allowOut alone opens nothing that was closed)', () => {
    expect(e2bNetworkPolicy({})).toEqual({ policy: undefined });
    expect(e2bNetworkPolicy({ allow_internet_access: true, network: { allowOut: ['pypi.org'] } })).toEqual({
      policy: undefined,
    });
  });

  it('names an allowOut entry that is no destination', () => {
    const answer = e2bNetworkPolicy({
      network: { denyOut: ['0.0.0.0/0'], allowOut: ['pypi.org', 'ftp://x'] },
    });
    expect(answer).toEqual({ error: expect.stringContaining('network.allowOut entry ftp://x') });
  });

  it('refuses what it does not do, and lets the SDK defaults through', () => {
    expect(refusedNetworkOptions({ network: { allowPublicTraffic: true, httpsPorts: [] } })).toEqual([]);
    expect(
      refusedNetworkOptions({
        network: { allowPublicTraffic: false, maskRequestHost: 'x', egressProxy: { address: 'p:1' } },
      }),
    ).toEqual(['network.allowPublicTraffic', 'network.maskRequestHost', 'network.egressProxy']);
    expect(refusedNetworkOptions({ network: 'all' })).toEqual([
      'network (expected {allowOut?: string[], denyOut?: string[]})',
    ]);
  });

  it('answers getInfo with what is in force', () => {
    expect(e2bNetworkInfo(null)).toEqual({ allowInternetAccess: true });
    expect(
      e2bNetworkInfo({ egress: 'allowlist', allow: ['pypi.org'], denyAlways: [], from: 'request' }),
    ).toEqual({
      allowInternetAccess: false,
      network: { allowOut: ['pypi.org'], denyOut: ['0.0.0.0/0'] },
    });
  });
});
