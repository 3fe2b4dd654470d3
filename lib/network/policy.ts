/**
 * A sandbox's egress policy (docs/network.md): what it may reach on the network, asked for at create (or
 * by its template, or the installation's default), made effective with the installation's deny-list that
 * no tenant policy can open, kept on its record, and placed only on a pool that declares it can enforce
 * it (the `network.egress.*` features).
 */
import { isIP } from 'node:net';
import * as z from '../zod.ts';

/** What one allow-list entry names: a domain (`*.` for its subdomains), an address or a CIDR range. */
export interface Destination {
  kind: 'domain' | 'address' | 'cidr';
  /** The domain (lower case, `*.` kept), the address, or the range's base address. */
  host: string;
  /** The CIDR prefix length; absent for a domain or an address. */
  prefix?: number;
  /** One port; absent: every port. */
  port?: number;
}

const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const domainPattern = new RegExp(`^(?:\\*\\.)?(?:${label}\\.)*${label}$`);

/**
 * One entry of an allow-list or deny-list: `example.com`, `*.example.com`, `203.0.113.7`, `10.0.0.0/8`,
 * `2001:db8::/32`, each optionally with `:port` (an IPv6 address or range with a port in brackets:
 * `[2001:db8::1]:443`). Undefined for anything else.
 */
export function parseDestination(text: string): Destination | undefined {
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed !== null) {
    host = bracketed[1] ?? '';
    // Brackets hold an IPv6 address or range, nothing else.
    if (isIP(host.split('/')[0] ?? '') !== 6) return undefined;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const at = text.lastIndexOf(':');
    const portText = text.slice(at + 1);
    if (!/^\d{1,5}$/.test(portText)) return undefined;
    host = text.slice(0, at);
    port = Number(portText);
  }
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const withPort = (d: Destination): Destination => (port === undefined ? d : { ...d, port });
  const slash = host.indexOf('/');
  if (slash >= 0) {
    const base = host.slice(0, slash);
    const prefixText = host.slice(slash + 1);
    const family = isIP(base);
    if (family === 0 || !/^\d{1,3}$/.test(prefixText)) return undefined;
    const prefix = Number(prefixText);
    if (prefix > (family === 4 ? 32 : 128)) return undefined;
    return withPort({ kind: 'cidr', host: base.toLowerCase(), prefix });
  }
  if (isIP(host) !== 0) return withPort({ kind: 'address', host: host.toLowerCase() });
  const domain = host.toLowerCase();
  if (domain.length > 253 || !domainPattern.test(domain) || /^[\d.]+$/.test(domain)) return undefined;
  return withPort({ kind: 'domain', host: domain });
}

export const destinationSchema = z.string().check(
  z.minLength(1),
  z.maxLength(260),
  z.refine((text) => parseDestination(text) !== undefined, {
    message:
      'expected a domain (example.com, *.example.com), an IP address or a CIDR range, optionally with :port (IPv6 with a port in brackets: [2001:db8::1]:443)',
  }),
);

export const egressModes = ['allow', 'deny', 'allowlist'] as const;
export const maxAllowEntries = 256;

/** The policy a create, a template or the installation's default asks for. */
export const networkPolicySchema = z
  .strictObject({
    /** allow: the network freely (but the installation's deny-list); deny: none at all; allowlist: only `allow`. */
    egress: z.enum(egressModes),
    /** The destinations an allowlist opens (required with allowlist, refused otherwise). */
    allow: z.optional(z.array(destinationSchema).check(z.maxLength(maxAllowEntries))),
  })
  .check(
    z.refine((policy) => policy.egress === 'allowlist' || policy.allow === undefined, {
      message: 'allow is only taken with egress: allowlist',
      path: ['allow'],
    }),
    z.refine((policy) => policy.egress !== 'allowlist' || (policy.allow?.length ?? 0) > 0, {
      message: 'egress: allowlist needs at least one destination in allow (egress: deny opens none)',
      path: ['allow'],
    }),
  );
export type NetworkPolicy = z.infer<typeof networkPolicySchema>;

/** Where a sandbox's policy came from. */
export const policySources = ['request', 'template', 'org', 'installation'] as const;

/** The policy in force for one sandbox, as its record and view keep it. */
export const sandboxNetworkSchema = z.object({
  egress: z.enum(egressModes),
  /** The allow-list, each entry as written (empty unless egress is allowlist). */
  allow: z.array(z.string()),
  /** The installation's deny-list when the sandbox was created: closed whatever `allow` says. */
  denyAlways: z.array(z.string()),
  from: z.enum(policySources),
});
export type SandboxNetwork = z.infer<typeof sandboxNetworkSchema>;

/**
 * What is closed to every sandbox of an installation by default: the instance metadata service and the
 * rest of the link-local ranges (credentials of whatever runs the sandbox), this network's own host
 * (loopback, "this host" 0.0.0.0/8) and the unspecified IPv6 address.
 */
export const defaultDenyAlways: readonly string[] = [
  '169.254.0.0/16',
  'fe80::/10',
  'fd00:ec2::254',
  '127.0.0.0/8',
  '::1',
  '0.0.0.0/8',
  '::',
];

/**
 * The policy of a new sandbox: the request's, else its template's, else its org's default, else the
 * installation's default; none of these: null (the pool's own network, whatever that is:
 * docs/network.md). The installation's deny-list holds whichever it is.
 */
export function resolveNetworkPolicy(
  requested: NetworkPolicy | undefined,
  template: NetworkPolicy | undefined,
  installation: { default?: NetworkPolicy | undefined; denyAlways: readonly string[] },
  org: NetworkPolicy | null = null,
): SandboxNetwork | null {
  const [policy, from] =
    requested !== undefined
      ? [requested, 'request' as const]
      : template !== undefined
        ? [template, 'template' as const]
        : org !== null
          ? [org, 'org' as const]
          : installation.default !== undefined
            ? [installation.default, 'installation' as const]
            : [undefined, undefined];
  if (policy === undefined || from === undefined) return null;
  return {
    egress: policy.egress,
    allow: policy.egress === 'allowlist' ? [...new Set(policy.allow ?? [])] : [],
    denyAlways: [...installation.denyAlways],
    from,
  };
}

/**
 * The features (lib/adapter/port.ts `features`, named here so the policy does not import the adapter
 * contract) a pool must declare to enforce `network`: each mode its own, an allow-list's addresses
 * and ranges `network.egress.allowlist`, its domains `network.egress.domains`, and an entry held to one
 * port `network.egress.ports` (a pool that cannot would open every port of that host).
 */
export function networkFeatures(network: Pick<SandboxNetwork, 'egress' | 'allow'> | null): string[] {
  if (network === null) return [];
  if (network.egress === 'allow') return ['network.egress.allow'];
  if (network.egress === 'deny') return ['network.egress.deny'];
  const destinations = destinationsOf(network.allow);
  const kinds = new Set(destinations.map((destination) => destination.kind));
  return [
    ...(kinds.has('address') || kinds.has('cidr') ? ['network.egress.allowlist'] : []),
    ...(kinds.has('domain') ? ['network.egress.domains'] : []),
    ...(destinations.some((destination) => destination.port !== undefined) ? ['network.egress.ports'] : []),
  ];
}

/** The parsed entries of a list whose entries were validated when they were taken. */
export function destinationsOf(entries: readonly string[]): Destination[] {
  return entries.flatMap((entry) => {
    const parsed = parseDestination(entry);
    return parsed === undefined ? [] : [parsed];
  });
}
