import { describe, it } from 'vitest';
import { daytonaConfigSchema } from '../../adapters/daytona/config.ts';
import { DaytonaAdapter } from '../../adapters/daytona/daytona-adapter.ts';
import { freestyleConfigSchema } from '../../adapters/freestyle/config.ts';
import { FreestyleAdapter } from '../../adapters/freestyle/freestyle-adapter.ts';
import { lambdaMicrovmsConfigSchema } from '../../adapters/lambda-microvms/config.ts';
import { LambdaMicrovmsAdapter } from '../../adapters/lambda-microvms/lambda-microvms-adapter.ts';
import { openSandboxConfigSchema } from '../../adapters/opensandbox/config.ts';
import { OpenSandboxAdapter } from '../../adapters/opensandbox/opensandbox-adapter.ts';
import type { ExecutionAdapter } from '../../lib/adapter/port.ts';
import { adapterConformance } from './adapter-conformance.ts';

/**
 * The conformance suite against the real services, when their credentials are in the environment. Each
 * run uses a fresh installation id and deletes every instance it created.
 *
 *   OPENSANDBOX_URL=http://opensandbox:8080 [OPENSANDBOX_API_KEY=...] npm run conformance
 *   DAYTONA_API_KEY=... [DAYTONA_API_URL=...] npm run conformance
 *   FREESTYLE_API_KEY=... npm run conformance
 *   DIFFERENTLY_LIVE_LAMBDA_MICROVMS=<image ARN built from examples/lambda-microvms> AWS_REGION=... \
 *     [DIFFERENTLY_LIVE_LAMBDA_MICROVMS_ROLE=<execution role ARN>] npm run conformance
 *     (AWS credentials from the default chain; the caller needs the actions docs/providers.md lists)
 */
const live: {
  name: string;
  variable: string;
  build: () => ExecutionAdapter;
  workdir: string;
  pwd?: RegExp;
  deviations?: Record<string, boolean>;
}[] = [
  {
    name: 'opensandbox (live)',
    variable: 'OPENSANDBOX_URL',
    build: () =>
      new OpenSandboxAdapter(
        openSandboxConfigSchema.parse({ apiURL: process.env.OPENSANDBOX_URL }),
        process.env.OPENSANDBOX_API_KEY,
      ),
    workdir: '/tmp',
  },
  {
    name: 'daytona (live)',
    variable: 'DAYTONA_API_KEY',
    build: () =>
      new DaytonaAdapter(
        daytonaConfigSchema.parse(
          process.env.DAYTONA_API_URL === undefined ? {} : { apiURL: process.env.DAYTONA_API_URL },
        ),
        process.env.DAYTONA_API_KEY,
      ),
    workdir: '/home/daytona',
    deviations: { stdinUnsupported: true, combinedOutput: true },
  },
  {
    name: 'freestyle (live)',
    variable: 'FREESTYLE_API_KEY',
    build: () => new FreestyleAdapter(freestyleConfigSchema.parse({}), process.env.FREESTYLE_API_KEY),
    workdir: '/root',
    deviations: { listingsWithoutSize: true },
  },
  {
    name: 'lambda-microvms (live)',
    variable: 'DIFFERENTLY_LIVE_LAMBDA_MICROVMS',
    build: () =>
      new LambdaMicrovmsAdapter(
        lambdaMicrovmsConfigSchema.parse({
          image: process.env.DIFFERENTLY_LIVE_LAMBDA_MICROVMS,
          ...(process.env.DIFFERENTLY_LIVE_LAMBDA_MICROVMS_ROLE !== undefined && {
            executionRoleArn: process.env.DIFFERENTLY_LIVE_LAMBDA_MICROVMS_ROLE,
          }),
        }),
      ),
    workdir: '/work',
    // The guest's devhost keeps each sandbox's files under its root (no bubblewrap in the AL2023 image).
    pwd: /\/work$/,
  },
];

for (const provider of live) {
  const value = process.env[provider.variable];
  if (value === undefined || value === '') {
    console.info(`live conformance for ${provider.name} skipped: ${provider.variable} is not set`);
    describe(`adapter conformance: ${provider.name}`, () => {
      it.skip(`skipped: set ${provider.variable} to run the conformance suite against the real service`, () => {});
    });
    continue;
  }
  adapterConformance(
    provider.name,
    async () => {
      const adapter = provider.build();
      return {
        adapter,
        features: (await adapter.capabilities()).features,
        workdir: provider.workdir,
        ...(provider.pwd && { pwd: provider.pwd }),
        ...(provider.deviations && { deviations: provider.deviations }),
      };
    },
    { timeoutMs: 600_000 },
  );
}
