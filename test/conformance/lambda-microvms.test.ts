import { lambdaMicrovmsConfigSchema } from '../../adapters/lambda-microvms/config.ts';
import { LambdaMicrovmsAdapter } from '../../adapters/lambda-microvms/lambda-microvms-adapter.ts';
import { LambdaMicrovmsFake } from '../fakes/lambda-microvms-server.ts';
import {
  fakeAccessKeyId as accessKeyId,
  fakeImage as image,
  microvmsClient,
} from '../helpers/lambda-microvms.ts';
import { adapterConformance } from './adapter-conformance.ts';

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
      breakBackend: () => {
        fake.faults.down = true;
      },
      restoreBackend: () => {
        fake.faults.down = false;
      },
      close: () => fake.stop(),
    };
  },
  { timeoutMs: 60_000 },
);
