import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage, type Duration, type ILocalBundling, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Code, Function as LambdaFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { env, metricsNamespace, sdkEndpointVariables } from '../../../functions/environment.ts';
import { buildFunctionSync, bundleEntryName, functionNodeOptions } from '../../function-bundle.ts';

/** The repository root: function entries are found from here. */
export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The file name the validated config is copied to in every bundle (read through DIFFERENTLY_CONFIG). */
export const bundledConfigName = 'differently.config.json';

export interface ControlPlaneFunctionProps {
  /** The entry file under functions/, without extension: `api`, `provision`, ... */
  readonly entry: string;
  /** The exported handler. @default 'handler' */
  readonly handler?: string;
  readonly timeout: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** Environment variables beyond the ones every function gets. */
  readonly environment?: Record<string, string>;
  /** A JSON file holding the validated config, copied into the bundle. */
  readonly configFile: string;
  readonly reservedConcurrentExecutions?: number;
  /** @default one month */
  readonly logRetention?: RetentionDays;
}

/**
 * Every variable the functions read is declared on every function, empty where unused: `sam local invoke
 * --env-vars` only overrides variables the template declares, so a local run can set the admin key, the
 * SDK endpoints or an inline config only if they are here. Empty means unset to the functions.
 */
export function functionEnvironment(specific: Record<string, string>): Record<string, string> {
  const declared = Object.fromEntries(
    [...Object.values(env), ...sdkEndpointVariables].map((name) => [name, '']),
  );
  return {
    ...declared,
    ...(functionNodeOptions.length > 0 && { NODE_OPTIONS: functionNodeOptions.join(' ') }),
    POWERTOOLS_SERVICE_NAME: 'differently',
    POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    [env.configPath]: `/var/task/${bundledConfigName}`,
    ...specific,
  };
}

/**
 * esbuild in this process. Its fields are part of CDK's bundling cache key, so each function (and each
 * config) gets a bundle of its own although all are assets of functions/.
 */
class LocalBundling implements ILocalBundling {
  readonly entry: string;
  readonly configFile: string;
  readonly configDigest: string;

  constructor(entry: string, configFile: string) {
    this.entry = entry;
    this.configFile = configFile;
    this.configDigest = createHash('sha256').update(readFileSync(configFile)).digest('hex');
  }

  tryBundle(outputDir: string): boolean {
    buildFunctionSync(this.entry, outputDir);
    copyFileSync(this.configFile, join(outputDir, bundledConfigName));
    return true;
  }
}

/**
 * The one way this app builds a Lambda function: bundled with the locally installed esbuild (no Docker)
 * as infra/function-bundle.ts says (ESM, minified, split into chunks so a cold start loads only what every
 * invocation runs; source maps beside the files, for `npm run stack-trace`, never read by the function),
 * nodejs24.x on arm64, active tracing, its own log group with retention, Powertools settings, and the
 * validated config inside the bundle. Not NodejsFunction: it always bundles to one file.
 */
export class ControlPlaneFunction extends Construct {
  readonly fn: LambdaFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: ControlPlaneFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Its own role, allowed to write to its own log group only (not the broad AWS-managed basic role).
    const role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    this.logGroup = logGroup;
    const entry = join(projectRoot, 'functions', `${props.entry}.ts`);
    this.fn = new LambdaFunction(this, 'Function', {
      code: Code.fromAsset(join(projectRoot, 'functions'), {
        // The bundle's own files decide its hash: the sources it was built from are not walked.
        assetHashType: AssetHashType.OUTPUT,
        bundling: {
          // Never pulled: local bundling always answers (it throws on a build error).
          image: DockerImage.fromRegistry('public.ecr.aws/sam/build-nodejs24.x'),
          local: new LocalBundling(entry, props.configFile),
        },
      }),
      handler: `${bundleEntryName}.${props.handler ?? 'handler'}`,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      tracing: Tracing.ACTIVE,
      logGroup,
      role,
      ...(props.reservedConcurrentExecutions !== undefined && {
        reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      }),
      environment: functionEnvironment(props.environment ?? {}),
    });
  }
}
