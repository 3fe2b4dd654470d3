import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createProtocolHandler } from '../../adapters/protocol/handler.ts';
import { type AdapterServer, startAdapterServer } from '../../adapters/protocol/server.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { errors } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import { installationChain } from '../../lib/store/audit/port.ts';
import { DaytonaFake } from '../fakes/daytona-server.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import { waitFor } from '../helpers/http-client.ts';
import { parseJson } from '../helpers/json.ts';
import { ChaosAdapter, seededRandom } from '../soak/soak.ts';

/**
 * Recognisable fake credentials for every pool kind, the soak's fault mix plus providers that quote the
 * key back and keys that are refused; then every log line, every response body, every audit event and
 * every lifecycle event is searched: no credential appears anywhere.
 */
const secrets = {
  SECRETS_TEST_OPENSANDBOX: 'os-SECRET-3f9c2a7e51d84b06',
  SECRETS_TEST_DAYTONA: 'dtn-SECRET-8b41e07c9a2d5f13',
  SECRETS_TEST_FREESTYLE: 'fs-SECRET-c6d0a95e27f4b318',
  SECRETS_TEST_REMOTE: 'rm-SECRET-51a7f3c08e9d2b64',
  SECRETS_TEST_WRONG: 'wrong-SECRET-0d6e2b9f4c17a853',
  SECRETS_TEST_FAKE: 'fake-SECRET-a2c4e6f8b1d3f5a7',
};

describe('credentials never leak', () => {
  const logLines: string[] = [];
  const bodies: string[] = [];
  let runtime: LocalRuntime;
  let plugin: AdapterServer;
  const opensandbox = new OpenSandboxFake({ apiKey: secrets.SECRETS_TEST_OPENSANDBOX });
  const daytona = new DaytonaFake({ apiKey: secrets.SECRETS_TEST_DAYTONA });
  const freestyle = new FreestyleFake({ apiKey: secrets.SECRETS_TEST_FREESTYLE });

  beforeAll(async () => {
    Object.assign(process.env, secrets);
    await Promise.all([opensandbox.start(), daytona.start(), freestyle.start()]);
    // The plugin fails with the soak's mix, and its errors quote its own token back.
    const chaos = new ChaosAdapter(seededRandom(3), 0.15, {});
    const original = chaos.create.bind(chaos);
    chaos.create = async (request) => {
      try {
        return await original(request);
      } catch {
        throw errors.providerUnavailable(
          `plugin says: token ${secrets.SECRETS_TEST_REMOTE} is fine, backend is not`,
        );
      }
    };
    plugin = await startAdapterServer(createProtocolHandler(chaos, { token: secrets.SECRETS_TEST_REMOTE }));
    const capture =
      (level: string): ((message: string, extra?: Record<string, unknown>) => void) =>
      (message, extra) => {
        logLines.push(`${level} ${message} ${JSON.stringify(extra ?? {})}`);
      };
    const log: Log = {
      debug: capture('debug'),
      info: capture('info'),
      warn: capture('warn'),
      error: capture('error'),
    };
    const fast = { pollIntervalMs: 10, readyTimeoutSeconds: 5 };
    runtime = await startLocalRuntime({
      config: parseConfig({
        devMode: true,
        pools: [
          {
            name: 'os',
            adapter: 'opensandbox',
            config: { apiURL: opensandbox.url, ...fast },
            credentials: { env: 'SECRETS_TEST_OPENSANDBOX' },
          },
          {
            name: 'os-wrong',
            adapter: 'opensandbox',
            config: { apiURL: opensandbox.url, ...fast },
            credentials: { env: 'SECRETS_TEST_WRONG' },
          },
          {
            name: 'dtn',
            adapter: 'daytona',
            config: { apiURL: `${daytona.url}/api`, ...fast },
            credentials: { env: 'SECRETS_TEST_DAYTONA' },
          },
          {
            name: 'fs',
            adapter: 'freestyle',
            config: { apiURL: freestyle.url, ...fast },
            credentials: { env: 'SECRETS_TEST_FREESTYLE' },
          },
          {
            name: 'plugin',
            adapter: 'remote',
            config: { endpoint: plugin.url },
            credentials: { env: 'SECRETS_TEST_REMOTE' },
          },
          {
            name: 'plugin-wrong',
            adapter: 'remote',
            config: { endpoint: plugin.url },
            credentials: { env: 'SECRETS_TEST_WRONG' },
          },
          { name: 'fake', adapter: 'fake', credentials: { env: 'SECRETS_TEST_FAKE' } },
        ],
        policy: { allowExternal: true, externalPools: ['dtn', 'fs'] },
        scheduler: { maxAttempts: 2 },
      }),
      log,
      queues: { provision: { visibilityTimeoutSeconds: 2 }, terminate: { visibilityTimeoutSeconds: 2 } },
      sweepIntervalSeconds: 1,
      reconcileIntervalSeconds: 1,
      poolRefreshIntervalSeconds: 1,
    });
  });

  afterAll(async () => {
    await runtime?.stop();
    await plugin?.close();
    await Promise.all([opensandbox.stop(), daytona.stop(), freestyle.stop()]);
    for (const name of Object.keys(secrets)) delete process.env[name];
  });

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${runtime.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    bodies.push(text);
    return { status: response.status, text };
  };

  it('keeps every credential out of logs, responses, audit and events through a storm of failures', {
    timeout: 120_000,
  }, async () => {
    const admin = runtime.adminKey;
    const org = parseJson(
      z.object({ id: z.string() }),
      (await call('POST', '/v1/admin/orgs', admin, { name: 'secrets' })).text,
    );
    const { key } = parseJson(
      z.object({ key: z.string() }),
      (await call('POST', `/v1/admin/orgs/${org.id}/keys`, admin, { name: 'k' })).text,
    );
    // Providers that quote the key back in their errors, and outages.
    opensandbox.faults.failCreate = {
      status: 400,
      code: `BAD_KEY_${secrets.SECRETS_TEST_OPENSANDBOX}`,
    };
    daytona.faults.failCreate = {
      status: 500,
      message: `upstream rejected ${secrets.SECRETS_TEST_DAYTONA}`,
    };
    freestyle.faults.failCreate = {
      status: 503,
      code: `UNAVAILABLE_${secrets.SECRETS_TEST_FREESTYLE}`,
    };
    const ids: string[] = [];
    for (let round = 0; round < 3; round++) {
      for (const pool of ['os', 'os-wrong', 'dtn', 'fs', 'plugin', 'plugin-wrong', 'fake']) {
        const created = await call('POST', '/v1/sandboxes', key, {
          placement: { allowedPools: [pool] },
          queueTimeoutSeconds: 20,
        });
        const { id } = parseJson(z.object({ id: z.string().optional() }), created.text);
        if (id !== undefined) ids.push(id);
      }
      if (round === 1) freestyle.faults.down = true;
    }
    freestyle.faults.down = false;
    // Let the workers, retries, reconciler and sweep run through the failures.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const statuses = await Promise.all(
        ids.map(
          async (id) =>
            parseJson(z.object({ status: z.string() }), (await call('GET', `/v1/sandboxes/${id}`, key)).text)
              .status,
        ),
      );
      if (statuses.every((s) => ['running', 'failed', 'terminated'].includes(s)) || Date.now() > deadline)
        break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    for (const id of ids) {
      await call('POST', `/v1/sandboxes/${id}/exec`, key, { command: 'echo hi' });
      await call('DELETE', `/v1/sandboxes/${id}`, key);
    }
    for (const path of [
      '/v1/admin/pools',
      '/v1/admin/pools/os-wrong',
      '/v1/admin/pools/plugin-wrong',
      '/v1/admin/reconcile',
    ]) {
      await call(path.endsWith('reconcile') ? 'POST' : 'GET', path, admin);
    }
    await call('GET', '/v1/trust', key);
    // Every termination has been tried at least once (ended, or noted as failing): the deletes' background
    // work, whose logs and events are searched below, has happened, however busy the machine is.
    const sandboxView = z.object({ status: z.string(), statusMessage: z.string().nullable() });
    await waitFor(
      () =>
        Promise.all(
          ids.map(async (id) =>
            sandboxView.parse(JSON.parse((await call('GET', `/v1/sandboxes/${id}`, key)).text)),
          ),
        ),
      (views) =>
        views.every(
          (v) =>
            v.status === 'terminated' ||
            v.status === 'failed' ||
            (v.status === 'terminating' && (v.statusMessage ?? '').startsWith('delete failed')),
        ),
      'every termination of the storm to have been tried',
      60_000,
    );

    const store = runtime.plane.store;
    const audit: string[] = [];
    for (const chain of [org.id, installationChain]) {
      await store.linkAudit(chain);
      let cursor: string | undefined;
      do {
        const page = await store.listAudit(chain, { limit: 100, cursor });
        audit.push(...page.items.map((event) => JSON.stringify(event)));
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    }
    const events = runtime.events.map((event) => JSON.stringify(event));
    const everything = { logLines, bodies, audit, events };
    // The storm reached every failure path: refused keys, quoted keys, outages.
    expect(logLines.join('\n')).toMatch(/credentials were rejected/);
    expect(bodies.join('\n')).toMatch(/credentials were rejected|rejected the credentials/);
    for (const [source, lines] of Object.entries(everything)) {
      for (const secret of Object.values(secrets)) {
        const leaks = lines.filter((line) => line.includes(secret));
        expect(leaks, `${secret} in ${source}: ${leaks[0]?.slice(0, 300)}`).toEqual([]);
      }
    }
    console.info(
      `secrets check: ${logLines.length} log lines, ${bodies.length} response bodies, ${audit.length} audit events, ${events.length} lifecycle events searched for ${Object.keys(secrets).length} credentials: none found`,
    );
  });
});
