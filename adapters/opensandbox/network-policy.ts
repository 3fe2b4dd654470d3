import { adapterErrors } from '../../lib/adapter/errors.ts';
import type { CreateRequest } from '../../lib/adapter/port.ts';
import type { OpenSandboxConfig } from './config.ts';

/**
 * The sidecar's policy for one create: the pool's own when it fixes one; with per-sandbox egress the
 * sandbox's (placement sent only what the pool declared: deny, or domains); otherwise none (open).
 */
export function networkPolicyOf(
  c: OpenSandboxConfig,
  req: CreateRequest,
): { networkPolicy?: { defaultAction: 'deny'; egress: { action: 'allow'; target: string }[] } } {
  if (c.egress === 'none') return { networkPolicy: { defaultAction: 'deny', egress: [] } };
  if (c.egress === 'allowlist')
    return {
      networkPolicy: {
        defaultAction: 'deny',
        egress: c.egressAllow.map((target) => ({ action: 'allow', target })),
      },
    };
  if (c.egress !== 'per-sandbox' || req.network === undefined) return {};
  if (req.network.egress === 'allow') {
    throw adapterErrors.unsupported('egress allow with an installation deny-list', {
      reason: 'the OpenSandbox sidecar filters DNS names, not addresses',
    });
  }
  return {
    networkPolicy: {
      defaultAction: 'deny',
      egress: req.network.allow.map((target) => ({ action: 'allow', target })),
    },
  };
}
