import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { poolConfigProblems } from '../../adapters/registry.ts';
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
export function loadSynthConfig(path: string | undefined): { config: Config; configFile: string } {
  const text = path === undefined ? emptyConfig : readFileSync(path, 'utf8');
  let config: Config;
  try {
    config = parseConfigText(text, path ?? 'the default config');
  } catch (error) {
    throw new Error(isApiError(error) ? error.message : String(error));
  }
  // Adapter settings too: a pool whose config its adapter would refuse fails synth, not a cold start.
  const problems = poolConfigProblems(config);
  if (problems.length > 0) throw new Error(`${path ?? 'the config'} is not valid: ${problems.join('; ')}`);
  const configFile = join(mkdtempSync(join(tmpdir(), 'differently-config-')), 'differently.config.json');
  writeFileSync(configFile, JSON.stringify(config));
  return { config, configFile };
}

export function buildApp(app: App, options: { skipAcknowledgements?: boolean } = {}): ControlPlaneStack {
  const path = (app.node.tryGetContext('config') as string | undefined) ?? process.env.DIFFERENTLY_CONFIG;
  const { config, configFile } = loadSynthConfig(path);
  const stack = new ControlPlaneStack(app, 'Differently', {
    config,
    configFile,
    description: 'Differently: a sandbox control plane',
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  if (options.skipAcknowledgements !== true) applyNagSuppressions(stack);
  return stack;
}

if (import.meta.main) {
  const app = new App();
  buildApp(app);
  app.synth();
}
