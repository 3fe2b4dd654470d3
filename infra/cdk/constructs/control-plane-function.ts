import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { env, metricsNamespace, sdkEndpointVariables } from '../../../functions/environment.ts';

/** The repository root: function entries and the lock file are found from here. */
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
    NODE_OPTIONS: '--enable-source-maps',
    POWERTOOLS_SERVICE_NAME: 'differently',
    POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    [env.configPath]: `/var/task/${bundledConfigName}`,
    ...specific,
  };
}

/**
 * The one way this app builds a Lambda function: NodejsFunction bundled with the locally installed
 * esbuild (no Docker), ESM, minified with source maps, nodejs24.x on arm64, active tracing, its own log
 * group with retention, Powertools settings, and the validated config inside the bundle.
 */
export class ControlPlaneFunction extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, props: ControlPlaneFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Its own role, allowed to write to its own log group only (not the broad AWS-managed basic role).
    const role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    this.fn = new NodejsFunction(this, 'Function', {
      entry: join(projectRoot, 'functions', `${props.entry}.ts`),
      handler: props.handler ?? 'handler',
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
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
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: true,
        mainFields: ['module', 'main'],
        // The AWS SDK is bundled too (the default leaves @aws-sdk/* to the runtime's copy): functions run
        // the exact client versions the tests ran, and an invocation outside Lambda (SAM, the sam-like
        // test) finds them in the bundle.
        externalModules: [],
        // Some dependencies are CommonJS and call require(); give the ESM bundle one.
        banner:
          "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        forceDockerBundling: false,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_inputDir: string, outputDir: string) => [
            `cp "${props.configFile}" "${join(outputDir, bundledConfigName)}"`,
          ],
        },
      },
    });
  }
}
