import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../lib/config.ts';
import {
  defaultDenyAlways,
  networkFeatures,
  networkPolicySchema,
  parseDestination,
  resolveNetworkPolicy,
} from '../../../lib/network/policy.ts';
import { createSandboxSchema } from '../../../lib/schemas/sandboxes.ts';

describe('egress destinations', () => {
  it('reads domains, wildcards, addresses and ranges, each with an optional port', () => {
    expect(parseDestination('Example.COM')).toEqual({ kind: 'domain', host: 'example.com' });
    expect(parseDestination('*.example.com:443')).toEqual({
      kind: 'domain',
      host: '*.example.com',
      port: 443,
    });
    expect(parseDestination('203.0.113.7')).toEqual({ kind: 'address', host: '203.0.113.7' });
    expect(parseDestination('203.0.113.7:5432')).toEqual({
      kind: 'address',
      host: '203.0.113.7',
      port: 5432,
    });
    expect(parseDestination('10.0.0.0/8')).toEqual({ kind: 'cidr', host: '10.0.0.0', prefix: 8 });
    expect(parseDestination('10.0.0.0/8:22')).toEqual({
      kind: 'cidr',
      host: '10.0.0.0',
      prefix: 8,
      port: 22,
    });
    expect(parseDestination('2001:db8::/32')).toEqual({ kind: 'cidr', host: '2001:db8::', prefix: 32 });
    expect(parseDestination('[2001:db8::1]:443')).toEqual({
      kind: 'address',
      host: '2001:db8::1',
      port: 443,
    });
    expect(parseDestination('::1')).toEqual({ kind: 'address', host: '::1' });
  });

  it('refuses what names no destination', () => {
    for (const text of [
      '',
      'exa mple.com',
      'example.com:0',
      'example.com:65536',
      'example.com:http',
      '*.*.example.com',
      'foo.*.com',
      '-bad.example.com',
      '10.0.0.0/33',
      '2001:db8::/129',
      '300.1.1.1',
      'http://example.com',
      'example.com/path',
      '[example.com]:443',
    ]) {
      expect(parseDestination(text), text).toBeUndefined();
    }
  });
});

describe('the egress policy a request asks for', () => {
  it('takes allow, deny and an allow-list, and says what is wrong with anything else', () => {
    expect(networkPolicySchema.safeParse({ egress: 'deny' }).success).toBe(true);
    expect(networkPolicySchema.safeParse({ egress: 'allowlist', allow: ['pypi.org:443'] }).success).toBe(
      true,
    );
    const cases: [unknown, string][] = [
      [{ egress: 'allowlist' }, 'needs at least one destination'],
      [{ egress: 'allowlist', allow: [] }, 'needs at least one destination'],
      [{ egress: 'deny', allow: ['pypi.org'] }, 'only taken with egress: allowlist'],
      [{ egress: 'allowlist', allow: ['http://pypi.org'] }, 'expected a domain'],
      [{ egress: 'open' }, 'egress'],
      [{ egress: 'allow', extra: 1 }, 'extra'],
    ];
    for (const [body, message] of cases) {
      const result = networkPolicySchema.safeParse(body);
      expect(result.success, JSON.stringify(body)).toBe(false);
      expect(JSON.stringify(result.error?.issues), JSON.stringify(body)).toContain(message);
    }
  });

  it('is part of the create body', () => {
    expect(createSandboxSchema.safeParse({ network: { egress: 'deny' } }).success).toBe(true);
    expect(createSandboxSchema.safeParse({ network: { egress: 'nope' } }).success).toBe(false);
  });
});

describe('the policy a sandbox takes', () => {
  const installation = { denyAlways: ['169.254.0.0/16'] };

  it('is the request’s, else the template’s, else the installation’s default, else none', () => {
    const request = { egress: 'deny' as const };
    const template = { egress: 'allowlist' as const, allow: ['pypi.org', 'pypi.org'] };
    const fallback = { egress: 'allow' as const };
    expect(resolveNetworkPolicy(request, template, { ...installation, default: fallback })).toEqual({
      egress: 'deny',
      allow: [],
      denyAlways: ['169.254.0.0/16'],
      from: 'request',
    });
    expect(resolveNetworkPolicy(undefined, template, installation)).toEqual({
      egress: 'allowlist',
      allow: ['pypi.org'],
      denyAlways: ['169.254.0.0/16'],
      from: 'template',
    });
    expect(resolveNetworkPolicy(undefined, undefined, { ...installation, default: fallback })?.from).toBe(
      'installation',
    );
    expect(resolveNetworkPolicy(undefined, undefined, installation)).toBeNull();
  });

  it('needs the features that enforce it', () => {
    const of = (egress: 'allow' | 'deny' | 'allowlist', allow: string[] = []) =>
      networkFeatures({ egress, allow });
    expect(networkFeatures(null)).toEqual([]);
    expect(of('allow')).toEqual(['network.egress.allow']);
    expect(of('deny')).toEqual(['network.egress.deny']);
    expect(of('allowlist', ['pypi.org'])).toEqual(['network.egress.domains']);
    expect(of('allowlist', ['10.0.0.0/8', '203.0.113.7'])).toEqual(['network.egress.allowlist']);
    expect(of('allowlist', ['10.0.0.0/8', '*.example.com:443'])).toEqual([
      'network.egress.allowlist',
      'network.egress.domains',
      'network.egress.ports',
    ]);
  });

  it('closes the metadata service and the host’s own addresses by default, and an operator can widen it', () => {
    const config = configSchema.parse({});
    expect(config.network.denyAlways).toEqual([...defaultDenyAlways]);
    expect(config.network.denyAlways).toEqual(
      expect.arrayContaining(['169.254.0.0/16', '127.0.0.0/8', '::1']),
    );
    expect(
      configSchema.parse({ network: { denyAlways: ['169.254.0.0/16', '10.0.0.0/8'] } }).network.denyAlways,
    ).toEqual(['169.254.0.0/16', '10.0.0.0/8']);
    expect(configSchema.safeParse({ network: { denyAlways: ['not a range'] } }).success).toBe(false);
    expect(
      configSchema.safeParse({ templates: [{ name: 'offline', network: { egress: 'deny' } }] }).success,
    ).toBe(true);
  });
});
