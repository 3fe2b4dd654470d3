import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotations, App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { adapterKind, poolConfigProblems } from '../../adapters/kinds.ts';
import { env } from '../../functions/environment.ts';
import { type Config, parseConfigText } from '../../lib/config.ts';
import { isApiError } from '../../lib/errors.ts';
import { ControlPlaneStack } from './control-plane-stack.ts';
import { applyNagSuppressions } from './nag-suppressions.ts';

/** A production configuration with no pools yet: pools are added with the config file or the admin API. */
const emptyConfig = '{"pools": []}';

/**
 * Reads and validates the config at synth time: `cdk synth -c config=differently.json` (or
 * DIFFERENTLY_CONFIG). A bad config fails synth with the field named. The validated config is written
 * to a file that every function bundle carries.
 */
/** A setting the operator got wrong: said in one line, without a stack trace. */
export class SynthConfigError extends Error {
  override readonly name = 'SynthConfigError';
}

export function loadSynthConfig(path: string | undefined): { config: Config; configFile: string } {
  let config: Config;
  try {
    const text = path === undefined ? emptyConfig : readFileSync(path, 'utf8');
    config = parseConfigText(text, path ?? 'the default config');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new SynthConfigError(
      missing ? `the config file ${path} does not exist` : isApiError(error) ? error.message : String(error),
    );
  }
  // Adapter settings too: a pool whose config its adapter would refuse fails synth, not a cold start.
  const problems = poolConfigProblems(config);
  // A deployment runs on Lambda: a devhost pool would run tenants' commands inside the control plane's
  // own functions, and a fake pool creates nothing. devMode does not lift this (it is for local runs).
  for (const pool of config.pools) {
    if (adapterKind(pool.adapter)?.runs === 'dev-only')
      problems.push(
        `pool ${pool.name}: the ${pool.adapter} adapter is for local runs only and cannot be deployed`,
      );
  }
  if (problems.length > 0)
    throw new SynthConfigError(`${path ?? 'the config'} is not valid: ${problems.join('; ')}`);
  const configFile = join(mkdtempSync(join(tmpdir(), 'differently-config-')), 'differently.config.json');
  writeFileSync(configFile, JSON.stringify(config));
  return { config, configFile };
}

/** A deploy setting from `-c name=value` (or cdk.json's context), if given. */
function contextString(app: App, name: string): string | undefined {
  const value: unknown = app.node.tryGetContext(name);
  return value === undefined || value === '' ? undefined : String(value);
}

export function buildApp(app: App, options: { skipAcknowledgements?: boolean } = {}): ControlPlaneStack {
  const path = contextString(app, 'config') ?? process.env[env.configPath];
  const { config, configFile } = loadSynthConfig(path);
  const alarmEmail = contextString(app, 'alarmEmail');
  const reserved = contextString(app, 'reconcileReservedConcurrency');
  if (reserved !== undefined && !/^[1-9][0-9]*$/.test(reserved))
    throw new SynthConfigError(`reconcileReservedConcurrency must be a positive integer, not ${reserved}`);
  const certificateArn = contextString(app, 'sandboxDomainCertificateArn');
  const zoneId = contextString(app, 'sandboxDomainHostedZoneId');
  const zoneName = contextString(app, 'sandboxDomainHostedZoneName');
  if ((zoneId === undefined) !== (zoneName === undefined))
    throw new SynthConfigError('give sandboxDomainHostedZoneId and sandboxDomainHostedZoneName together');
  if (config.e2b.sandboxDomain !== undefined && certificateArn === undefined)
    throw new SynthConfigError(
      `e2b.sandboxDomain ${config.e2b.sandboxDomain} needs -c sandboxDomainCertificateArn=<an ACM certificate for *.${config.e2b.sandboxDomain}>`,
    );
  const stack = new ControlPlaneStack(app, 'Differently', {
    ...(certificateArn !== undefined && {
      sandboxDomain: {
        certificateArn,
        ...(zoneId !== undefined && zoneName !== undefined && { hostedZone: { id: zoneId, name: zoneName } }),
      },
    }),
    config,
    configFile,
    description: 'Differently: a sandbox control plane',
    ...(alarmEmail !== undefined && { alarmEmail }),
    ...(reserved !== undefined && { reconcileReservedConcurrency: Number(reserved) }),
  });
  // A backend that reports no capacity of its own (an OpenSandbox server, an account's MicroVM quota):
  // without maxConcurrency, placement sends it every sandbox it is offered until the backend refuses.
  const bound: Record<string, string> = {
    opensandbox: 'what the server can run',
    'lambda-microvms': "the account's concurrent MicroVM quota",
  };
  for (const pool of config.pools) {
    if (adapterKind(pool.adapter)?.unboundedCapacity === true && pool.maxConcurrency === 0) {
      Annotations.of(stack).addWarningV2(
        'differently:unbounded-pool-without-max-concurrency',
        `pool ${pool.name} (${pool.adapter}): without maxConcurrency it takes every sandbox placement offers it; set maxConcurrency to ${bound[pool.adapter] ?? 'what the backend can run'}`,
      );
    }
  }
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  if (options.skipAcknowledgements !== true) applyNagSuppressions(stack);
  return stack;
}

if (import.meta.main) {
  try {
    const app = new App();
    buildApp(app);
    app.synth();
  } catch (error) {
    if (!(error instanceof SynthConfigError)) throw error;
    process.stderr.write(`differently: ${error.message}\n`);
    process.exit(1);
  }
}
