import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeForStatus } from '../../../adapters/httpx/http-client.ts';
import { LineSplitter } from '../../../adapters/httpx/lines.ts';
import { shellQuote } from '../../../adapters/httpx/shell-quote.ts';
import { openSandboxConfigSchema } from '../../../adapters/opensandbox/config.ts';
import { OpenSandboxAdapter } from '../../../adapters/opensandbox/opensandbox-adapter.ts';
import { instanceStateOf } from '../../../adapters/opensandbox/wire.ts';
import { OpenSandboxFake } from '../../fakes/opensandbox-server.ts';
import {
  createSandboxRequestSchema,
  runCommandRequestSchema,
} from '../../fixtures/opensandbox-request-schemas.ts';
import { createRequest, failureOf, listedWhileFilterIgnored } from '../../helpers/adapter-calls.ts';

const fast = { pollIntervalMs: 10, readyTimeoutSeconds: 10 };
const request = (overrides: Record<string, unknown> = {}) =>
  createRequest(
    {
      installation: 'inst_test',
      resources: { cpu: 0.5, memoryMiB: 64, diskGiB: 10 },
      env: { A: '1' },
      labels: { team: 'x' },
      ttlSeconds: 30,
    },
    overrides,
  );

const failure = failureOf;

describe('the OpenSandbox mappings', () => {
  it.each([
    [404, 'not_found'],
    [429, 'insufficient_capacity'],
    [409, 'invalid_state'],
    [400, 'invalid_request'],
    [422, 'invalid_request'],
    [401, 'provider_unavailable'],
    [403, 'provider_unavailable'],
    [500, 'provider_unavailable'],
    [503, 'provider_unavailable'],
  ])('HTTP %i -> %s', (status, code) => {
    expect(codeForStatus(status)).toBe(code);
  });

  it.each([
    ['Running', 'docker', 'running'],
    ['Paused', 'docker', 'paused'],
    ['Paused', 'kubernetes', 'stopped'],
    ['Failed', 'docker', 'error'],
    ['Pending', 'docker', 'pending'],
    ['Pausing', 'docker', 'pending'],
    ['Resuming', 'docker', 'pending'],
    ['SomethingNew', 'docker', 'pending'],
  ] as const)('state %s on %s -> %s', (state, runtime, expected) => {
    expect(instanceStateOf(state, runtime)).toBe(expected);
  });

  it('quotes argument lists into one shell command', () => {
    expect(shellQuote(['echo', "it's", 'a b', '$HOME', 'plain-1.2'])).toBe(
      `echo 'it'\\''s' 'a b' '$HOME' plain-1.2`,
    );
  });

  it('splits output into lines; a final fragment gains a newline', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    splitter.push('a\nb');
    splitter.push('c\nd');
    splitter.end();
    expect(lines).toEqual(['a\n', 'bc\n', 'd\n']);
  });

  it('builds create bodies the published schema accepts: image, snapshot, pool template, egress, signed ports', () => {
    const ajv = new Ajv({ strict: false });
    const valid = ajv.compile(createSandboxRequestSchema);
    const variants = [
      openSandboxConfigSchema.parse({ apiURL: 'http://x' }),
      openSandboxConfigSchema.parse({ apiURL: 'http://x', templateId: 'python-pool' }),
      openSandboxConfigSchema.parse({
        apiURL: 'http://x',
        runtime: 'kubernetes',
        ports: 'signed',
        egress: 'allowlist',
        egressAllow: ['pypi.org', '*.github.com'],
      }),
      openSandboxConfigSchema.parse({ apiURL: 'http://x', egress: 'none' }),
    ];
    for (const config of variants) {
      const adapter = new OpenSandboxAdapter(config);
      for (const req of [
        request(),
        request({ fromSnapshot: 'snap-1' }),
        request({ template: 'python:3.12' }),
      ]) {
        const body = adapter.createBody(req);
        expect(valid(body), JSON.stringify({ body, errors: valid.errors })).toBe(true);
      }
    }
    const body = new OpenSandboxAdapter(
      variants[0] ?? openSandboxConfigSchema.parse({ apiURL: 'http://x' }),
    ).createBody(request());
    // cpu at least 1, memory at least 128Mi, timeout at least 60 s, the tail -f entrypoint, ownership metadata.
    expect(body).toMatchObject({
      resourceLimits: { cpu: '1', memory: '128Mi' },
      timeout: 60,
      entrypoint: ['tail', '-f', '/dev/null'],
      image: { uri: 'ubuntu:24.04' },
      metadata: {
        'differently-sandbox-id': expect.stringMatching(/^sbx_/),
        'differently-installation': 'inst_test',
      },
    });
    expect(body).not.toHaveProperty('resourceLimits.ephemeral-storage');
  });
});

describe("the OpenSandbox adapter's per-sandbox egress", () => {
  const config = openSandboxConfigSchema.parse({ apiURL: 'http://x', egress: 'per-sandbox' });
  const adapter = new OpenSandboxAdapter(config);
  const network = (egress: 'allow' | 'deny' | 'allowlist', allow: string[] = []) => ({
    egress,
    allow,
    denyAlways: ['169.254.0.0/16'],
    from: 'request' as const,
  });

  it('sends each sandbox its own sidecar policy (deny, or its domains), none without one, valid by the spec', () => {
    const valid = new Ajv({ strict: false }).compile(createSandboxRequestSchema);
    const denied = adapter.createBody(request({ network: network('deny') }));
    expect(denied.networkPolicy).toEqual({ defaultAction: 'deny', egress: [] });
    const listed = adapter.createBody(
      request({ network: network('allowlist', ['pypi.org', '*.github.com']) }),
    );
    expect(listed.networkPolicy).toEqual({
      defaultAction: 'deny',
      egress: [
        { action: 'allow', target: 'pypi.org' },
        { action: 'allow', target: '*.github.com' },
      ],
    });
    const none = adapter.createBody(request());
    expect(none).not.toHaveProperty('networkPolicy');
    for (const body of [denied, listed, none]) expect(valid(body), JSON.stringify(valid.errors)).toBe(true);
  });

  it('declares only what the sidecar enforces', async () => {
    const declared = (await adapter.capabilities()).features;
    expect(declared).toEqual(expect.arrayContaining(['network.egress.deny', 'network.egress.domains']));
    for (const missing of ['network.egress.allow', 'network.egress.allowlist', 'network.egress.ports'])
      expect(declared).not.toContain(missing);
    expect(() => adapter.createBody(request({ network: network('allow') }))).toThrow(/egress allow/);
  });
});

describe("the OpenSandbox adapter against its fake server: the seeds' scenarios", () => {
  let fake: OpenSandboxFake;
  let adapter: OpenSandboxAdapter;

  beforeAll(async () => {
    fake = await new OpenSandboxFake({ apiKey: 'os-key-0123456789' }).start();
    adapter = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({ apiURL: fake.url, ...fast }),
      'os-key-0123456789',
    );
  });

  afterAll(async () => {
    await fake.stop();
  });

  it('the fake frames answers as the server does: states move with time, empty 202s have Content-Length: 0, every answer an X-Request-ID', async () => {
    const created = await adapter.create(request());
    const headers = { 'open-sandbox-api-key': 'os-key-0123456789' };
    const paused = await fetch(`${fake.url}/v1/sandboxes/${created.ref}/pause`, { method: 'POST', headers });
    expect(paused.status).toBe(202);
    expect(paused.headers.get('content-length')).toBe('0');
    expect(paused.headers.get('transfer-encoding')).toBeNull();
    expect(paused.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // Nobody polls: the pause completes on the server's own clock all the same.
    const state = async () => fake.sandboxes.get(created.ref)?.state;
    await expect
      .poll(async () => {
        const listed = (await (
          await fetch(`${fake.url}/v1/sandboxes?page=1&pageSize=200`, { headers })
        ).json()) as {
          items: { id: string; status: { state: string } }[];
        };
        return listed.items.find((item) => item.id === created.ref)?.status.state;
      })
      .toBe('Paused');
    expect(await state()).toBe('Paused');
    await adapter.delete(created.ref);
  });

  it('refuses an image that cannot be pulled as invalid_request, and cleans up', async () => {
    const error = await failure(adapter.create(request({ template: 'registry.example/does-not-exist:1' })));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/pull/);
    const left = [...fake.sandboxes.values()].filter((s) => s.image?.uri.includes('does-not-exist'));
    expect(left.every((s) => s.state === 'Stopping' || s.state === 'Terminated')).toBe(true);
  });

  it('reports a pause the runtime never starts as unsupported_operation', async () => {
    const sandbox = await adapter.create(request());
    fake.faults.pauseNeverStarts = true;
    const fastPause = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({ apiURL: fake.url, pollIntervalMs: 10, readyTimeoutSeconds: 1 }),
      'os-key-0123456789',
    );
    try {
      const error = await failure(fastPause.pause(sandbox.ref));
      expect(error.code).toBe('unsupported_operation');
      expect(error.details.reason).toMatch(/never started the pause/);
    } finally {
      fake.faults.pauseNeverStarts = false;
    }
  });

  it('leaves out a sandbox being deleted while listed, without failing the list', async () => {
    const installation = 'inst_listing';
    const kept = await adapter.create(request({ installation }));
    const going = await adapter.create(request({ installation }));
    fake.faults.deleteWhileListed = going.ref;
    const listed = await adapter.list(installation);
    expect(listed.map((i) => i.ref)).toEqual([kept.ref]);
    expect((await failure(adapter.get(going.ref))).code).toBe('not_found');
  });

  it("lists only this installation's sandboxes, also when the server ignores the filter", async () => {
    const { ours, listed } = await listedWhileFilterIgnored(adapter, fake, request);
    expect(listed).toEqual([ours]);
  });

  it('fails the whole List when a later page fails, and pages through everything otherwise', async () => {
    const installation = 'inst_paging';
    for (let i = 0; i < 130; i++) {
      const id = `paged-${i}`;
      fake.sandboxes.set(id, {
        id,
        state: 'Running',
        metadata: { 'differently-installation': installation, 'differently-sandbox-id': `sbx_${i}` },
        env: {},
        entrypoint: ['tail'],
        createdAt: new Date().toISOString(),
        settleAt: 0,
      });
    }
    expect((await adapter.list(installation)).length).toBe(130);
    fake.faults.failListPage = 2;
    expect((await failure(adapter.list(installation))).code).toBe('provider_unavailable');
    for (let i = 0; i < 130; i++) fake.sandboxes.delete(`paged-${i}`);
  });

  it('sends exec bodies the published schema accepts; timeouts in ms only when asked; stdin staged in a file', async () => {
    const sandbox = await adapter.create(request());
    fake.received.commandBodies.length = 0;
    expect((await adapter.exec(sandbox.ref, { args: ['echo', "it's"] })).stdout).toBe("it's\n");
    expect((await adapter.exec(sandbox.ref, { command: 'printf abc' })).stdout).toBe('abc\n');
    expect((await adapter.exec(sandbox.ref, { command: 'cat', stdin: 'piped' })).stdout).toBe('piped\n');
    await adapter.exec(sandbox.ref, { command: 'true', timeoutSeconds: 5, cwd: '/work', env: { B: '2' } });
    const valid = new Ajv({ strict: false }).compile(runCommandRequestSchema);
    for (const body of fake.received.commandBodies)
      expect(valid(body), JSON.stringify(valid.errors)).toBe(true);
    expect(fake.received.commandBodies.map((b) => (b as { timeout?: number }).timeout)).toEqual([
      undefined,
      undefined,
      undefined,
      5000,
    ]);
    // The staged stdin file is gone afterwards.
    expect((await adapter.exec(sandbox.ref, { command: 'ls -a /tmp' })).stdout).not.toMatch(
      /differently-stdin/,
    );
  });

  it('moves the provider TTL with the sandbox (renew-expiration, fixing E0.20)', async () => {
    const sandbox = await adapter.create(request({ ttlSeconds: 120 }));
    const before = fake.sandboxes.get(sandbox.ref)?.expiresAt ?? '';
    await adapter.extendTtl(sandbox.ref, 7200);
    expect((fake.sandboxes.get(sandbox.ref)?.expiresAt ?? '') > before).toBe(true);
    // An earlier expiry than the current one is not an error: the backstop is already later.
    await expect(adapter.extendTtl(sandbox.ref, 60)).resolves.toBeUndefined();
  });

  it('refuses memory snapshots unless the pool lists snapshots.memory', async () => {
    const sandbox = await adapter.create(request());
    expect((await failure(adapter.snapshot(sandbox.ref, 'memory'))).code).toBe('unsupported_operation');
    const declared = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({ apiURL: fake.url, ...fast }),
      'os-key-0123456789',
      ['snapshots.memory'],
    );
    expect((await declared.snapshot(sandbox.ref, 'memory')).kind).toBe('memory');
  });

  it('refuses port URLs that need request headers; signed URLs need the Kubernetes gateway', async () => {
    const sandbox = await adapter.create(request());
    const signed = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({ apiURL: fake.url, ports: 'signed', ...fast }),
      'os-key-0123456789',
    );
    // The Docker runtime cannot sign routes: the provider's 400 comes through as invalid_request.
    expect((await failure(signed.exposePort(sandbox.ref, 8080))).code).toBe('invalid_request');
    expect((await failure(adapter.exposePort(sandbox.ref, 8080))).code).toBe('unsupported_operation');
  });
});

describe('the OpenSandbox adapter against garbage', () => {
  const config = openSandboxConfigSchema.parse({ apiURL: 'http://opensandbox.invalid', ...fast });
  const answering = (response: () => Response) =>
    new OpenSandboxAdapter(config, 'secret-key-0123456789', undefined, async () => response());

  it.each([
    [
      'an HTML error page',
      () =>
        new Response('<html><body>502 Bad Gateway</body></html>', {
          status: 502,
          headers: { 'content-type': 'text/html' },
        }),
    ],
    ['truncated JSON', () => new Response('{"id": "abc", "status": {"sta', { status: 200 })],
    ['a 200 with a missing field', () => new Response('{"id": "abc"}', { status: 200 })],
  ])('maps %s to provider_unavailable with the status, never a crash', async (_, response) => {
    const error = await failure(answering(response).get('abc'));
    expect(error.code).toBe('provider_unavailable');
    expect(error.details.status ?? error.details.provider).toBeDefined();
  });

  it('never echoes the key, even when the provider quotes it back', async () => {
    const adapter = answering(
      () =>
        new Response(JSON.stringify({ code: 'X', message: 'bad key secret-key-0123456789' }), {
          status: 400,
        }),
    );
    const error = await failure(adapter.get('abc'));
    expect(JSON.stringify(error) + error.message).not.toContain('secret-key-0123456789');
    const rejected = await failure(
      answering(
        () =>
          new Response('{"code":"INVALID_API_KEY","message":"Invalid API key secret-key-0123456789"}', {
            status: 401,
          }),
      ).health(),
    );
    expect(rejected.message).toBe('opensandbox: the credentials were rejected (401)');
  });

  it('reports a file over 100 MiB instead of cutting it silently (fixing E0.35)', async () => {
    const huge = new OpenSandboxAdapter(config, undefined, undefined, async (input) => {
      const url = String(input);
      if (url.includes('/endpoints/'))
        return new Response(JSON.stringify({ endpoint: 'execd.invalid' }), { status: 200 });
      return new Response('x', { status: 200, headers: { 'content-length': String(200 * 1024 * 1024) } });
    });
    const error = await failure(huge.readFile('abc', '/work/big.bin'));
    expect(error.code).toBe('payload_too_large');
  });
});
