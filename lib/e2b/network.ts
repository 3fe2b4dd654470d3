/**
 * E2B's egress options (`allow_internet_access`, `network.allowOut` / `denyOut`) onto Differently's one
 * policy (lib/network/policy.ts, docs/network.md). E2B's rule: allowed entries win over denied ones, and
 * `allow_internet_access: false` is `denyOut: ['0.0.0.0/0']`. So a create that denies all traffic is
 * egress deny, or an allow-list of its allowOut; one that denies nothing is the pool's own network. A deny
 * of some ranges only (a deny-list of the tenant's own) is not a policy Differently has: refused, named.
 */
import { type NetworkPolicy, networkPolicySchema, type SandboxNetwork } from '../network/policy.ts';
import * as z from '../zod.ts';

/** E2B's ALL_TRAFFIC, and its IPv6 twin. */
const allTraffic = new Set(['0.0.0.0/0', '::/0']);

const e2bNetworkSchema = z.looseObject({
  allowOut: z.optional(z.array(z.string())),
  denyOut: z.optional(z.array(z.string())),
  allowPublicTraffic: z.optional(z.nullable(z.boolean())),
  maskRequestHost: z.optional(z.nullable(z.string())),
  httpsPorts: z.optional(z.nullable(z.array(z.number()))),
});

/** The network options Differently does not honour, each named for the 400 (empty: all are honoured). */
export function refusedNetworkOptions(body: Record<string, unknown>): string[] {
  const network = body.network;
  if (network === undefined || network === null) return [];
  const parsed = e2bNetworkSchema.safeParse(network);
  if (!parsed.success) return ['network (expected {allowOut?: string[], denyOut?: string[]})'];
  const refused: string[] = [];
  for (const [name, value] of Object.entries(parsed.data)) {
    if (value === undefined || value === null) continue;
    if (name === 'allowOut' || name === 'denyOut') continue;
    // The SDK's defaults: port URLs that need no token, no HTTPS ports.
    if (name === 'allowPublicTraffic' && value === true) continue;
    if (name === 'httpsPorts' && Array.isArray(value) && value.length === 0) continue;
    refused.push(`network.${name}`);
  }
  const partialDeny = (parsed.data.denyOut ?? []).filter((entry) => !allTraffic.has(entry));
  if (partialDeny.length > 0) {
    refused.push(
      `network.denyOut of some ranges only (${partialDeny.join(', ')}): deny all traffic (0.0.0.0/0) and list what is allowed in allowOut`,
    );
  }
  return refused;
}

/**
 * The policy an E2B create asks for (its options already passed refusedNetworkOptions), or undefined for
 * none. An allowOut entry that is not a domain, address or CIDR is a 400 naming it.
 */
export function e2bNetworkPolicy(
  body: Record<string, unknown>,
): { policy: NetworkPolicy | undefined } | { error: string } {
  const parsed = e2bNetworkSchema.safeParse(body.network ?? {});
  const network = parsed.success ? parsed.data : {};
  const deniesAll =
    body.allow_internet_access === false || (network.denyOut ?? []).some((entry) => allTraffic.has(entry));
  if (!deniesAll) return { policy: undefined };
  const allowOut = network.allowOut ?? [];
  const policy = networkPolicySchema.safeParse(
    allowOut.length === 0 ? { egress: 'deny' } : { egress: 'allowlist', allow: allowOut },
  );
  if (!policy.success) {
    const issue = policy.error.issues[0];
    const at = issue?.path.at(-1);
    const entry = typeof at === 'number' ? allowOut[at] : undefined;
    return {
      error: `network.allowOut${entry === undefined ? '' : ` entry ${entry}`}: ${issue?.message ?? 'invalid'}`,
    };
  }
  return { policy: policy.data };
}

/** getInfo's allowInternetAccess and network for the policy in force (null: the pool's own network). */
export function e2bNetworkInfo(network: SandboxNetwork | null): {
  allowInternetAccess: boolean;
  network?: { allowOut: string[]; denyOut: string[] };
} {
  if (network === null || network.egress === 'allow') return { allowInternetAccess: true };
  return { allowInternetAccess: false, network: { allowOut: [...network.allow], denyOut: ['0.0.0.0/0'] } };
}
