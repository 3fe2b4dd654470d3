import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devhostConfigSchema } from '../../adapters/devhost/config.ts';
import { DevhostAdapter } from '../../adapters/devhost/devhost-adapter.ts';
import { bubblewrapAvailable } from '../../adapters/devhost/jail.ts';
import { FakeAdapter, fakeDefaultFeatures } from '../../adapters/fake/fake-adapter.ts';
import { createProtocolHandler } from '../../adapters/protocol/handler.ts';
import { startAdapterServer } from '../../adapters/protocol/server.ts';
import { remoteConfigSchema } from '../../adapters/remote/config.ts';
import { RemoteAdapter } from '../../adapters/remote/remote-adapter.ts';
import { errors } from '../../lib/errors.ts';
import { fakeShell } from '../helpers/fake-shell.ts';
import { adapterConformance, type ConformanceHarness, type FailureKind } from './adapter-conformance.ts';

const failures: Record<FailureKind, () => Error> = {
  capacity: () => errors.insufficientCapacity('the fake is full'),
  sandbox: () => errors.sandboxFailed('this sandbox failed'),
  outage: () => errors.providerUnavailable('the fake is down'),
};

/** Hooks that steer a FakeAdapter, whether it is called directly or through a plugin server. */
function fakeHooks(fake: FakeAdapter): Partial<ConformanceHarness> {
  return {
    loseNextCreateResponse: () =>
      fake.inject('create', { error: errors.providerUnavailable('lost'), afterEffect: true }),
    failNextList: () => fake.inject('list', { error: errors.providerUnavailable('a page failed') }),
    failNextCreate: (kind) => fake.inject('create', { error: failures[kind]() }),
    breakBackend: () => fake.inject('health', { error: errors.providerUnavailable('down'), times: 1_000 }),
    restoreBackend: () => fake.clearFailures(),
  };
}

adapterConformance('fake', async () => {
  const fake = new FakeAdapter({ exec: fakeShell() });
  return { adapter: fake, features: fakeDefaultFeatures, workdir: '/work', ...fakeHooks(fake) };
});

adapterConformance('devhost', async () => {
  const root = await mkdtemp(join(tmpdir(), 'conformance-devhost-'));
  const adapter = new DevhostAdapter(devhostConfigSchema.parse({ root }));
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    // Jailed (bubblewrap), the sandbox's folder is the command's `/`; otherwise a host folder.
    ...(!bubblewrapAvailable() && { pwd: /\/fs\/work$/ }),
    close: () => rm(root, { recursive: true, force: true }),
  };
});

/** The client and the handler round-trip every route: a fake behind a plugin server, with a token. */
adapterConformance('remote over a fake plugin', async () => {
  const fake = new FakeAdapter({ exec: fakeShell() });
  const token = 'conformance-token-0123456789';
  const server = await startAdapterServer(createProtocolHandler(fake, { token }));
  const config = remoteConfigSchema.parse({ endpoint: server.url });
  const adapter = new RemoteAdapter(config, token);
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    ...fakeHooks(fake),
    withBadCredentials: () => ({
      adapter: new RemoteAdapter(config, 'wrong-token-abcdef'),
      credential: 'wrong-token-abcdef',
    }),
    close: () => server.close(),
  };
});

/** A plugin that declares less than its adapter can do: undeclared operations are refused with 501. */
adapterConformance('remote over a plugin declaring exec and files only', async () => {
  const fake = new FakeAdapter({ exec: fakeShell() });
  const server = await startAdapterServer(createProtocolHandler(fake, { features: ['exec', 'files'] }));
  const adapter = new RemoteAdapter(remoteConfigSchema.parse({ endpoint: server.url }));
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    ...fakeHooks(fake),
    close: () => server.close(),
  };
});

/**
 * The devhost adapter behind a plugin server (what `npm run adapter:serve -- --kind devhost` and the
 * Lambda MicroVMs guest agent run): its streamed output goes through the server's backpressure.
 */
adapterConformance('remote over a devhost plugin', async () => {
  const root = await mkdtemp(join(tmpdir(), 'conformance-remote-devhost-'));
  const server = await startAdapterServer(
    createProtocolHandler(new DevhostAdapter(devhostConfigSchema.parse({ root }))),
  );
  const adapter = new RemoteAdapter(remoteConfigSchema.parse({ endpoint: server.url }));
  return {
    adapter,
    features: (await adapter.capabilities()).features,
    workdir: '/work',
    ...(!bubblewrapAvailable() && { pwd: /\/fs\/work$/ }),
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});
