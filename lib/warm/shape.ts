import { createHash } from 'node:crypto';
import { canonicalJson } from '../audit/chain.ts';
import type { NetworkPolicy, SandboxNetwork } from '../network/policy.ts';
import { resolveNetworkPolicy } from '../network/policy.ts';
import { type Resources, resourcesSchema } from '../schemas/sandbox-parts.ts';
import type { WarmTarget } from '../schemas/warm-targets.ts';

/** What a warm instance is, and what a create must ask for to be answered from it. */
export interface WarmShape {
  template: string | null;
  resources: Resources;
  network: SandboxNetwork | null;
}

/**
 * The key of a shape: equal for a target and a create exactly when the instance would be what the create
 * asked for (its template, resources and egress policy in force; where the policy came from does not
 * matter, what it allows does).
 */
export function shapeKey(shape: WarmShape): string {
  const network =
    shape.network === null
      ? null
      : { egress: shape.network.egress, allow: shape.network.allow, denyAlways: shape.network.denyAlways };
  const text = canonicalJson({ template: shape.template, resources: shape.resources, network });
  return createHash('sha256').update(text).digest('hex').slice(0, 24);
}

/** What resolves a target's policy as a create's would be: the templates' policies and the installation's. */
export interface ShapeContext {
  templates: readonly { name: string; network?: NetworkPolicy | undefined }[];
  network: { default?: NetworkPolicy | undefined; denyAlways: readonly string[] };
}

/** A target's instances, resolved as a create naming the same template, resources and policy would be. */
export function targetShape(target: WarmTarget, context: ShapeContext): WarmShape {
  const template = target.template ?? null;
  return {
    template,
    resources: resourcesSchema.parse(target.resources ?? {}),
    network: resolveNetworkPolicy(
      target.network,
      context.templates.find((entry) => entry.name === template)?.network,
      context.network,
    ),
  };
}
