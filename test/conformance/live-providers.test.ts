import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { ExchangeRecorder } from '../recordings/recorder.ts';
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
 *
 * With DIFFERENTLY_RECORD=1, the HTTP providers' runs are recorded, redacted, into
 * test/recordings/<provider>/ (test/recordings/recorder.ts), which test/contract/recordings.test.ts then
 * holds the fakes to. Lambda MicroVMs goes through the AWS SDK, not fetch, and is not recorded.
 */
const live: {
  name: string;
  variable: string;
  /** `fetch`: the recorder's, when recording. */
  build: (fetch?: typeof globalThis.fetch) => ExecutionAdapter;
  /** What the recording is made of: the provider's folder, its base URL and the credentials to redact. */
  records?: { provider: string; baseUrl: () => string; secrets: () => string[] };
  workdir: string;
  pwd?: RegExp;
  deviations?: Record<string, boolean>;
}[] = [
  {
    name: 'opensandbox (live)',
    variable: 'OPENSANDBOX_URL',
    build: (fetch) =>
      new OpenSandboxAdapter(
        openSandboxConfigSchema.parse({ apiURL: process.env.OPENSANDBOX_URL }),
        process.env.OPENSANDBOX_API_KEY,
        undefined,
        fetch,
      ),
    records: {
      provider: 'opensandbox',
      baseUrl: () => process.env.OPENSANDBOX_URL ?? '',
      secrets: () => [process.env.OPENSANDBOX_API_KEY ?? ''],
    },
    workdir: '/tmp',
  },
  {
    name: 'daytona (live)',
    variable: 'DAYTONA_API_KEY',
    build: (fetch) =>
      new DaytonaAdapter(
        daytonaConfigSchema.parse(
          process.env.DAYTONA_API_URL === undefined ? {} : { apiURL: process.env.DAYTONA_API_URL },
        ),
        process.env.DAYTONA_API_KEY,
        fetch,
      ),
    records: {
      provider: 'daytona',
      baseUrl: () =>
        daytonaConfigSchema.parse(
          process.env.DAYTONA_API_URL === undefined ? {} : { apiURL: process.env.DAYTONA_API_URL },
        ).apiURL,
      secrets: () => [process.env.DAYTONA_API_KEY ?? ''],
    },
    workdir: '/home/daytona',
    deviations: { stdinUnsupported: true, combinedOutput: true },
  },
  {
    name: 'freestyle (live)',
    variable: 'FREESTYLE_API_KEY',
    build: (fetch) =>
      new FreestyleAdapter(freestyleConfigSchema.parse({}), process.env.FREESTYLE_API_KEY, fetch),
    records: {
      provider: 'freestyle',
      baseUrl: () => freestyleConfigSchema.parse({}).apiURL,
      secrets: () => [process.env.FREESTYLE_API_KEY ?? ''],
    },
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

const recordingsFolder = join(dirname(fileURLToPath(import.meta.url)), '..', 'recordings');

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
      const records = process.env.DIFFERENTLY_RECORD === '1' ? provider.records : undefined;
      const recorder =
        records === undefined
          ? undefined
          : new ExchangeRecorder({
              provider: records.provider,
              baseUrl: records.baseUrl(),
              secrets: records.secrets(),
            });
      const adapter = provider.build(recorder?.fetch);
      return {
        adapter,
        ...(recorder !== undefined &&
          records !== undefined && {
            close: async () => {
              const stamp = new Date().toISOString().replace(/[:.]/g, '-');
              const file = join(recordingsFolder, records.provider, `${stamp}.json`);
              await recorder.save(file);
              console.info(`recorded ${records.provider} into ${file}`);
            },
          }),
        features: (await adapter.capabilities()).features,
        workdir: provider.workdir,
        ...(provider.pwd && { pwd: provider.pwd }),
        ...(provider.deviations && { deviations: provider.deviations }),
      };
    },
    { timeoutMs: 600_000 },
  );
}
