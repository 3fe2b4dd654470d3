import { daytonaConfigSchema } from '../../adapters/daytona/config.ts';
import { DaytonaAdapter } from '../../adapters/daytona/daytona-adapter.ts';
import { freestyleConfigSchema } from '../../adapters/freestyle/config.ts';
import { FreestyleAdapter } from '../../adapters/freestyle/freestyle-adapter.ts';
import { lambdaMicrovmsConfigSchema } from '../../adapters/lambda-microvms/config.ts';
import { LambdaMicrovmsAdapter } from '../../adapters/lambda-microvms/lambda-microvms-adapter.ts';
import { openSandboxConfigSchema } from '../../adapters/opensandbox/config.ts';
import { OpenSandboxAdapter } from '../../adapters/opensandbox/opensandbox-adapter.ts';
import { DaytonaFake } from '../fakes/daytona-server.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { LambdaMicrovmsFake } from '../fakes/lambda-microvms-server.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import {
  fakeAccessKeyId as accessKeyId,
  fakeImage as image,
  microvmsClient,
} from '../helpers/lambda-microvms.ts';
import { adapterConformance } from './adapter-conformance.ts';

const fast = { pollIntervalMs: 10, readyTimeoutSeconds: 10 };

/** Every fake service goes down and comes back through its `faults.down`, and stops with the harness. */
function outageOf(fake: { faults: { down: boolean }; stop(): Promise<void> }) {
  return {
    breakBackend: () => {
      fake.faults.down = true;
    },
    restoreBackend: () => {
      fake.faults.down = false;
    },
    close: () => fake.stop(),
  };
}

adapterConformance('opensandbox (docker runtime) against its fake server', async () => {
  const fake = await new OpenSandboxFake({ apiKey: 'os-key-0123456789' }).start();
  const config = openSandboxConfigSchema.parse({ apiURL: fake.url, ...fast });
  const adapter = new OpenSandboxAdapter(config, 'os-key-0123456789');
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    pwd: /\/work$/,
    loseNextCreateResponse: () => {
      fake.faults.dropCreateResponse = true;
    },
    failNextList: () => {
      fake.faults.failListPage = 1;
    },
    failNextCreate: (kind) => {
      if (kind === 'sandbox') fake.faults.podReadyTimeout = true;
      else
        fake.faults.failCreate =
          kind === 'capacity'
            ? { status: 429, code: 'GENERAL::TOO_MANY' }
            : { status: 503, code: 'GENERAL::UNAVAILABLE' };
    },
    withBadCredentials: () => ({
      adapter: new OpenSandboxAdapter(config, 'wrong-os-key-abcdef'),
      credential: 'wrong-os-key-abcdef',
    }),
    ...outageOf(fake),
  };
});

adapterConformance(
  'opensandbox (kubernetes runtime, signed ports, egress allowlist) against its fake server',
  async () => {
    const fake = await new OpenSandboxFake({ runtime: 'kubernetes' }).start();
    const adapter = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({
        apiURL: fake.url,
        runtime: 'kubernetes',
        ports: 'signed',
        egress: 'allowlist',
        egressAllow: ['pypi.org'],
        ...fast,
      }),
    );
    return {
      adapter,
      features: (await adapter.capabilities()).features,
      workdir: '/work',
      pwd: /\/work$/,
      close: () => fake.stop(),
    };
  },
);

adapterConformance('daytona against its fake server', async () => {
  const fake = await new DaytonaFake({ apiKey: 'dtn-key-0123456789' }).start();
  const config = daytonaConfigSchema.parse({ apiURL: `${fake.url}/api`, ...fast });
  const adapter = new DaytonaAdapter(config, 'dtn-key-0123456789');
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    pwd: /\/work$/,
    deviations: { stdinUnsupported: true, combinedOutput: true },
    loseNextCreateResponse: () => {
      fake.faults.dropCreateResponse = true;
    },
    failNextList: () => {
      fake.faults.failListAfterPages = 0;
    },
    failNextCreate: (kind) => {
      if (kind === 'sandbox') fake.faults.nextSandboxErrors = true;
      else
        fake.faults.failCreate =
          kind === 'capacity'
            ? { status: 429, message: 'ThrottlerException: Too Many Requests' }
            : { status: 503, message: 'Service Unavailable' };
    },
    withBadCredentials: () => ({
      adapter: new DaytonaAdapter(config, 'wrong-dtn-key-abcdef'),
      credential: 'wrong-dtn-key-abcdef',
    }),
    ...outageOf(fake),
  };
});

adapterConformance('freestyle (v5, background requests) against its fake server', async () => {
  const fake = await new FreestyleFake({ apiKey: 'fs-key-0123456789' }).start();
  const config = freestyleConfigSchema.parse({ apiURL: fake.url, ...fast });
  const adapter = new FreestyleAdapter(config, 'fs-key-0123456789');
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    pwd: /\/work$/,
    deviations: { listingsWithoutSize: true },
    loseNextCreateResponse: () => {
      fake.faults.dropCreateResponse = true;
    },
    failNextList: () => {
      fake.faults.failListOffset = 0;
    },
    failNextCreate: (kind) => {
      fake.faults.failCreate =
        kind === 'capacity'
          ? { status: 429, code: 'TOO_MANY_REQUESTS' }
          : kind === 'sandbox'
            ? { status: 500, code: 'VM_SETUP_FAILED' }
            : { status: 503, code: 'SERVICE_UNAVAILABLE' };
    },
    withBadCredentials: () => ({
      adapter: new FreestyleAdapter(config, 'wrong-fs-key-abcdef'),
      credential: 'wrong-fs-key-abcdef',
    }),
    ...outageOf(fake),
  };
});

adapterConformance(
  'lambda-microvms against its fake server (guest agents as host processes)',
  async () => {
    // A page smaller than the suite's VMs, so List follows nextToken.
    const fake = await new LambdaMicrovmsFake({ images: [image], accessKeyId, pageSize: 3 }).start();
    const config = lambdaMicrovmsConfigSchema.parse({ image, pollIntervalMs: 20, readyTimeoutSeconds: 20 });
    const adapter = new LambdaMicrovmsAdapter(config, { client: microvmsClient(fake.url) });
    return {
      adapter,
      features: (await adapter.capabilities()).features,
      workdir: '/work',
      pwd: /\/work$/,
      loseNextCreateResponse: () => {
        fake.faults.dropRunResponse = true;
      },
      failNextList: () => {
        fake.faults.failListPage = 1;
      },
      failNextCreate: (kind) => {
        if (kind === 'sandbox') fake.faults.nextVmFails = true;
        else
          fake.faults.failRun =
            kind === 'capacity'
              ? { status: 402, type: 'ServiceQuotaExceededException' }
              : { status: 500, type: 'InternalServerException' };
      },
      withBadCredentials: () => ({
        adapter: new LambdaMicrovmsAdapter(config, {
          client: microvmsClient(fake.url, 'AKIAWRONGKEY00000000', 'wrong-secret-access-key-abcdef'),
        }),
        credential: 'wrong-secret-access-key-abcdef',
      }),
      ...outageOf(fake),
    };
  },
  { timeoutMs: 60_000 },
);
