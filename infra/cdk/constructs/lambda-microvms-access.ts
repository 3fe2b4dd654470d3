import { Aws } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { lambdaMicrovmsConfigSchema } from '../../../adapters/lambda-microvms/config.ts';
import type { PoolSpec } from '../../../lib/pools/registry.ts';

/**
 * What each function does with a lambda-microvms pool, as the IAM actions it needs (the service authorizes
 * them in the `lambda:` namespace). Instance actions are granted on the pool's image ARN, the resource
 * the service authorizes them against (VMs take no tags, so no tag condition can narrow them further);
 * ListMicrovms has no resource-level permission and is granted on `*`.
 */
const imageHealth = ['lambda:GetMicrovmImage', 'lambda:GetMicrovmImageVersion'];

export const microvmActionsByFunction = {
  // Exec, files and Get reach a VM; registering a pool checks its health (its image).
  api: ['lambda:GetMicrovm', 'lambda:CreateMicrovmAuthToken', ...imageHealth],
  apiStream: ['lambda:GetMicrovm', 'lambda:CreateMicrovmAuthToken'],
  provision: ['lambda:RunMicrovm', 'lambda:GetMicrovm', 'lambda:CreateMicrovmAuthToken'],
  terminate: ['lambda:TerminateMicrovm', 'lambda:GetMicrovm'],
  operations: [
    'lambda:SuspendMicrovm',
    'lambda:ResumeMicrovm',
    'lambda:GetMicrovm',
    'lambda:CreateMicrovmAuthToken',
  ],
  reconcile: ['lambda:GetMicrovm', 'lambda:CreateMicrovmAuthToken', 'lambda:TerminateMicrovm'],
  poolRefresh: imageHealth,
} as const;

/** The one function that lists a pool's VMs. */
const listers = new Set(['reconcile']);

export type MicrovmCaller = keyof typeof microvmActionsByFunction;

/**
 * Grants every function exactly what it does with the config's lambda-microvms pools. Pools registered
 * later through the admin API get no grant here: their permissions are the operator's to add
 * (docs/providers.md).
 */
export function grantLambdaMicrovmsPools(
  pools: readonly PoolSpec[],
  functions: Record<MicrovmCaller, IGrantable>,
): void {
  const configs = pools
    .filter((pool) => pool.adapter === 'lambda-microvms')
    .map((pool) => lambdaMicrovmsConfigSchema.parse(pool.config));
  if (configs.length === 0) return;
  const images = [...new Set(configs.map((config) => config.image))];
  for (const [name, grantee] of Object.entries(functions) as [MicrovmCaller, IGrantable][]) {
    const actions = microvmActionsByFunction[name];
    if (actions.length > 0)
      grantee.grantPrincipal.addToPrincipalPolicy(
        new PolicyStatement({ actions: [...actions], resources: images }),
      );
    if (listers.has(name))
      grantee.grantPrincipal.addToPrincipalPolicy(
        new PolicyStatement({ actions: ['lambda:ListMicrovms'], resources: ['*'] }),
      );
  }
  // RunMicrovm passes the execution role and the network connectors: only the provision worker runs VMs.
  const roles = [...new Set(configs.flatMap((config) => config.executionRoleArn ?? []))];
  if (roles.length > 0)
    functions.provision.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['iam:PassRole'],
        resources: roles,
        conditions: { StringEquals: { 'iam:PassedToService': 'lambda.amazonaws.com' } },
      }),
    );
  const connectors = [
    ...new Set(
      configs.flatMap((config) => {
        const region = config.region ?? Aws.REGION;
        const managed = (name: string) =>
          `arn:${Aws.PARTITION}:lambda:${region}:aws:network-connector:aws-network-connector:${name}`;
        // Left out, the service passes its defaults for the caller: HTTP ingress and internet egress.
        return [
          ...(config.ingressNetworkConnectors ?? [managed('HTTP_INGRESS')]),
          ...(config.egressNetworkConnectors ?? [managed('INTERNET_EGRESS')]),
        ];
      }),
    ),
  ];
  functions.provision.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['lambda:PassNetworkConnector'], resources: connectors }),
  );
}
