import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter, fakeDefaultFeatures } from '../../../adapters/fake/fake-adapter.ts';
import { createProtocolHandler } from '../../../adapters/protocol/handler.ts';
import { lambdaAdapterHandler } from '../../../adapters/protocol/lambda.ts';
import { type AdapterServer, startAdapterServer } from '../../../adapters/protocol/server.ts';
import { remoteConfigSchema } from '../../../adapters/remote/config.ts';
import { RemoteAdapter } from '../../../adapters/remote/remote-adapter.ts';
import type { ExecutionAdapter } from '../../../lib/adapter/port.ts';
import { errors } from '../../../lib/errors.ts';
import { parseJson } from '../../helpers/json.ts';

const token = 'protocol-test-token-0123456789';

/** The handler's wire behaviour, seen with raw HTTP: what a plugin author's client would see. */
describe('the adapter protocol handler', () => {
  let server: AdapterServer;
  const fake = new FakeAdapter();
  const call = (
    method: string,
    path: string,
    init: { auth?: string | null; body?: string | Uint8Array; type?: string } = {},
  ) =>
    fetch(`${server.url}/adapter/v1${path}`, {
      method,
      headers: {
        ...(init.auth !== null && { authorization: `Bearer ${init.auth ?? token}` }),
        ...(init.body !== undefined && { 'content-type': init.type ?? 'application/json' }),
      },
      ...(init.body !== undefined && { body: init.body }),
    });

  beforeAll(async () => {
    server = await startAdapterServer(createProtocolHandler(fake, { token }));
  });

  afterAll(async () => {
    await server.close();
  });

  it('requires the token on every route, /info and /health included, with the envelope and the header', async () => {
    for (const path of ['/info', '/health', '/capacity', '/instances?installation=x']) {
      for (const auth of [null, 'wrong']) {
        const response = await call('GET', path, { auth });
        expect(response.status, path).toBe(401);
        expect(response.headers.get('differently-adapter-protocol')).toBe('1');
        expect(await response.json()).toMatchObject({ error: { code: 'unauthenticated' } });
      }
    }
  });

  it('answers /info with protocol 1 and EffectiveFeatures applied, every response with the header', async () => {
    const response = await call('GET', '/info');
    expect(response.status).toBe(200);
    expect(response.headers.get('differently-adapter-protocol')).toBe('1');
    const body = (await response.json()) as {
      info: { protocol: string };
      capabilities: { features: string[] };
    };
    expect(body.info.protocol).toBe('1');
    expect(body.capabilities.features).toContain('exec.stream');
    expect((await call('GET', '/health')).status).toBe(200);
  });

  it('creates, execs (sync and NDJSON), and deletes with 204; missing is 404 on get, 204 on delete is not required', async () => {
    const body = JSON.stringify({
      id: 'sbx_1',
      installation: 'i',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: {},
      labels: {},
    });
    const created = (await (await call('POST', '/instances', { body })).json()) as { ref: string };
    const sync = await call('POST', `/instances/${created.ref}/exec`, {
      body: JSON.stringify({ command: 'echo hi' }),
    });
    expect(await sync.json()).toMatchObject({ exitCode: 0, stdout: 'echo hi\n' });
    const streamed = await call('POST', `/instances/${created.ref}/exec?stream=1`, {
      body: JSON.stringify({ command: 'x' }),
    });
    expect(streamed.headers.get('content-type')).toBe('application/x-ndjson');
    expect(
      (await streamed.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([{ stream: 'stdout', data: 'x\n' }, { exitCode: 0 }]);
    expect((await call('DELETE', `/instances/${created.ref}`)).status).toBe(204);
    const missing = await call('GET', `/instances/${created.ref}`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('maps insufficient_capacity and sandbox_failed to 503 with their own codes', async () => {
    const body = JSON.stringify({
      id: 'sbx_2',
      installation: 'i',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: {},
      labels: {},
    });
    fake.inject('create', { error: errors.insufficientCapacity('full') });
    const full = await call('POST', '/instances', { body });
    expect(full.status).toBe(503);
    expect(await full.json()).toMatchObject({ error: { code: 'insufficient_capacity', message: 'full' } });
    fake.inject('create', { error: errors.sandboxFailed('pod never ready') });
    const failed = await call('POST', '/instances', { body });
    expect(failed.status).toBe(503);
    expect(await failed.json()).toMatchObject({ error: { code: 'sandbox_failed' } });
  });

  it('refuses unknown actions with 404, bad bodies with 400, and oversized bodies with 413 before reading them', async () => {
    const unknown = await call('POST', '/instances/fake_x/explode');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'not_found' } });
    const bad = await call('POST', '/instances', { body: '{"id": 5}' });
    expect(bad.status).toBe(400);
    const garbage = await call('POST', '/instances', { body: 'not json' });
    expect(await garbage.json()).toMatchObject({ error: { code: 'invalid_request' } });
    const big = await call('POST', '/instances', { body: 'x'.repeat(4 * 1024 * 1024 + 1) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: 'payload_too_large' } });
  });

  it("hands a create's egress policy to the adapter behind it, through the remote client, and refuses a malformed one", async () => {
    const remote = new RemoteAdapter(remoteConfigSchema.parse({ endpoint: server.url }), token);
    const network = {
      egress: 'allowlist' as const,
      allow: ['pypi.org:443', '10.0.0.0/8'],
      denyAlways: ['169.254.0.0/16'],
      from: 'request' as const,
    };
    const id = 'sbx_protocol_network';
    await remote.create({
      id,
      installation: 'inst_p',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: {},
      labels: {},
      network,
    });
    expect(fake.createRequests.find((request) => request.id === id)?.network).toEqual(network);
    const malformed = await call('POST', '/instances', {
      body: JSON.stringify({ id: 'sbx_bad_network', installation: 'inst_p', network: { egress: 'open' } }),
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });

  it('answers 501 for optional routes an adapter lacks', async () => {
    const bare: ExecutionAdapter = {
      info: () => fake.info(),
      capabilities: () => fake.capabilities(),
      capacity: () => fake.capacity(),
      health: () => fake.health(),
      create: (r) => fake.create(r),
      get: (r) => fake.get(r),
      list: (i) => fake.list(i),
      delete: (r) => fake.delete(r),
      exec: (r, q) => fake.exec(r, q),
    };
    const minimal = await startAdapterServer(createProtocolHandler(bare));
    try {
      const info = (await (await fetch(`${minimal.url}/adapter/v1/info`)).json()) as {
        capabilities: { features: string[] };
      };
      // Declared by the fake, dropped by EffectiveFeatures: this adapter has none of the optional interfaces.
      // The egress features are declaration-only (no interface): they pass through as declared.
      expect(info.capabilities.features).toEqual([
        'exec',
        ...fakeDefaultFeatures.filter((feature) => feature.startsWith('network.egress.')),
      ]);
      for (const [method, path] of [
        ['POST', '/instances/r/stop'],
        ['POST', '/instances/r/pause'],
        ['GET', '/instances/r/files?path=/'],
        ['POST', '/instances/r/snapshots'],
        ['POST', '/instances/r/ports'],
        ['DELETE', '/snapshots/s'],
      ] as const) {
        const response = await fetch(`${minimal.url}/adapter/v1${path}`, {
          method,
          ...(method === 'POST' && {
            body: path.endsWith('ports') ? '{"port":80}' : '{}',
            headers: { 'content-type': 'application/json' },
          }),
        });
        expect(response.status, path).toBe(501);
        expect(await response.json()).toMatchObject({ error: { code: 'unsupported_operation' } });
      }
    } finally {
      await minimal.close();
    }
  });

  it('accepts requests shaped as a Go plugin client or any other language sends them: omitted, null and empty optional fields, unknown fields', async () => {
    // A Go CreateRequest with nil maps (null), omitempty zero values dropped, an empty template and a newer field.
    const created = await call('POST', '/instances', {
      body: JSON.stringify({
        id: 'sbx_go',
        installation: 'inst-go',
        template: '',
        resources: { cpu: 1, memoryMiB: 512 },
        env: null,
        labels: null,
        fromSnapshot: '',
        ttlSeconds: 0,
        priority: 'a field from a newer control plane',
      }),
    });
    expect(created.status, await created.clone().text()).toBe(200);
    const { ref } = (await created.json()) as { ref: string };
    // Without env and labels at all, and without resources.
    const bare = await call('POST', '/instances', {
      body: JSON.stringify({ id: 'sbx_bare', installation: 'i' }),
    });
    expect(bare.status, await bare.clone().text()).toBe(200);
    for (const body of [
      { command: 'echo go', args: null, env: null, cwd: '', stdin: '', timeoutSeconds: 0 },
      { args: ['echo', 'go'], command: '' },
      { command: 'echo go', extra: true },
    ]) {
      const exec = await call('POST', `/instances/${ref}/exec`, { body: JSON.stringify(body) });
      expect(exec.status, JSON.stringify(body)).toBe(200);
    }
    // Required fields, types and limits are still checked, naming the field.
    for (const [body, field] of [
      [{ installation: 'i' }, 'id'],
      [{ id: 'x', installation: 'i', env: { A: 1 } }, 'env'],
      [{ id: 'x', installation: 'i', resources: { cpu: -1 } }, 'resources.cpu'],
    ] as const) {
      const refused = await call('POST', '/instances', { body: JSON.stringify(body) });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(field);
    }
    const neither = await call('POST', `/instances/${ref}/exec`, {
      body: JSON.stringify({ command: '', args: [] }),
    });
    expect(neither.status).toBe(400);
  });

  it('runs behind a Lambda Function URL with the same answers (streams collected)', async () => {
    const lambda = lambdaAdapterHandler(createProtocolHandler(new FakeAdapter(), { token }));
    const event = (method: string, rawPath: string, body?: string, auth = token): LambdaFunctionURLEvent =>
      ({
        version: '2.0',
        rawPath,
        rawQueryString: rawPath.includes('?') ? '' : '',
        headers: { Authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
        requestContext: { http: { method } },
        ...(body !== undefined && { body, isBase64Encoded: false }),
        isBase64Encoded: false,
      }) as unknown as LambdaFunctionURLEvent;
    expect((await lambda(event('GET', '/adapter/v1/health', undefined, 'nope'))).statusCode).toBe(401);
    const info = await lambda(event('GET', '/adapter/v1/info'));
    expect(info.statusCode).toBe(200);
    expect(info.headers?.['differently-adapter-protocol']).toBe('1');
    const created = await lambda(
      event(
        'POST',
        '/adapter/v1/instances',
        JSON.stringify({
          id: 'sbx_l',
          installation: 'i',
          resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
          env: {},
          labels: {},
        }),
      ),
    );
    const { ref } = parseJson(z.object({ ref: z.string() }), String(created.body));
    const streamed = await lambda(
      event('POST', `/adapter/v1/instances/${ref}/exec`, JSON.stringify({ command: 'hi' })),
    );
    expect(JSON.parse(String(streamed.body))).toMatchObject({ exitCode: 0 });
    const big = await lambda(event('POST', '/adapter/v1/instances', 'x'.repeat(4 * 1024 * 1024 + 1)));
    expect(big.statusCode).toBe(413);
    // The refusal carries the protocol header too, so the client reads it as payload_too_large.
    expect(big.headers?.['differently-adapter-protocol']).toBe('1');
    expect(JSON.parse(String(big.body))).toMatchObject({ error: { code: 'payload_too_large' } });
  });
});

/** The client against servers that misbehave in the ways the protocol names. */
describe('the remote adapter client', () => {
  let server: Server;
  let url: string;
  let reply: (path: string) => { status: number; headers?: Record<string, string>; body: string };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const answer = reply(req.url ?? '/');
      res.writeHead(
        answer.status,
        answer.headers ?? { 'differently-adapter-protocol': '1', 'content-type': 'application/json' },
      );
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const client = (secret?: string) => new RemoteAdapter(remoteConfigSchema.parse({ endpoint: url }), secret);
  const failure = async (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a failure');
      },
      (error: { code: string; message: string; details: unknown }) => error,
    );

  it("accepts answers shaped as the specification's own examples and a Go plugin sends them (omitted and null fields)", async () => {
    const answers: Record<string, unknown> = {
      // The specification's lab-fleet: no templates, regions or maxDiskGiB; no description or limitations.
      '/adapter/v1/info': {
        info: {
          kind: 'lab-fleet',
          version: '0.1',
          trust: 'private',
          isolation: 'KVM virtual machine',
          protocol: '1',
        },
        capabilities: { features: ['exec', 'files'], maxCPU: 8, maxMemoryMiB: 16384, templates: null },
      },
      '/adapter/v1/capacity': { bounded: false },
      '/adapter/v1/health': {},
      '/adapter/v1/instances?installation=none': null,
      '/adapter/v1/instances/r1': {
        ref: 'r1',
        sandboxId: 'sbx_1',
        state: 'running',
        region: null,
        message: '',
      },
      '/adapter/v1/instances/r1/exec': { exitCode: 2, stdout: 'out' },
      '/adapter/v1/instances/r1/files?path=%2Fwork': [
        { name: 'a', path: '/work/a', isDir: null, modifiedAt: null },
      ],
      '/adapter/v1/instances/r1/snapshots': { ref: 's1' },
      '/adapter/v1/instances?installation=empty': [],
    };
    reply = (path) => ({
      status: 200,
      body: JSON.stringify(path in answers ? answers[path] : { unexpected: path }),
    });
    const remote = client();
    expect(await remote.capabilities()).toEqual({
      features: ['exec', 'files'],
      maxCPU: 8,
      maxMemoryMiB: 16384,
      maxDiskGiB: 0,
      templates: [],
      regions: [],
    });
    expect(remote.info()).toMatchObject({ kind: 'remote:lab-fleet', isolation: 'KVM virtual machine' });
    expect(await remote.capacity()).toEqual({
      bounded: false,
      freeCPU: 0,
      freeMemoryMiB: 0,
      largestFreeCPU: 0,
      largestFreeMemoryMiB: 0,
    });
    await expect(remote.health()).resolves.toBeUndefined();
    expect(await remote.list('none')).toEqual([]);
    expect(await remote.list('empty')).toEqual([]);
    expect(await remote.get('r1')).toEqual({ ref: 'r1', sandboxId: 'sbx_1', state: 'running' });
    expect(await remote.exec('r1', { command: 'x' })).toEqual({
      exitCode: 2,
      stdout: 'out',
      stderr: '',
      durationMs: 0,
      truncated: false,
      timedOut: false,
    });
    expect(await remote.listFiles('r1', '/work')).toEqual([
      { name: 'a', path: '/work/a', isDir: false, size: 0 },
    ]);
    expect(await remote.snapshot('r1', 'memory')).toEqual({ ref: 's1', kind: 'memory', sizeBytes: 0 });
    // What the specification requires is still required: an Instance without its state is refused.
    answers['/adapter/v1/instances/r1'] = { ref: 'r1', sandboxId: 'sbx_1' };
    expect((await failure(remote.get('r1'))).code).toBe('provider_unavailable');
  });

  it('caps a JSON answer and a file download at a stated limit, with a clear error, without reading them whole', async () => {
    reply = () => ({
      status: 200,
      headers: {
        'differently-adapter-protocol': '1',
        'content-type': 'application/json',
        'content-length': String(200 * 1024 * 1024),
      },
      body: '',
    });
    const json = await failure(client().get('x'));
    expect(json.code).toBe('provider_unavailable');
    expect(json.message).toMatch(/more than 67108864 bytes/);
    const download = await failure(client().readFile('x', '/big'));
    expect(download.message).toMatch(/more than 104857600 bytes/);
  });

  it('refuses a server of another protocol version, naming both (E0.25)', async () => {
    reply = () => ({
      status: 200,
      headers: { 'differently-adapter-protocol': '2', 'content-type': 'application/json' },
      body: '{}',
    });
    const error = await failure(client().capabilities());
    expect(error.code).toBe('provider_unavailable');
    expect(error.message).toMatch(/speaks adapter protocol 2; this control plane speaks 1/);
    reply = () => ({
      status: 200,
      body: JSON.stringify({
        info: { kind: 'x', version: '9', trust: 'private', isolation: 'vm', protocol: '2' },
        capabilities: { features: [], maxCPU: 0, maxMemoryMiB: 0, maxDiskGiB: 0, templates: [], regions: [] },
      }),
    });
    expect((await failure(client().capabilities())).message).toMatch(/protocol 2/);
    reply = () => ({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html>' });
    expect((await failure(client().health())).message).toMatch(/did not answer as a Differently adapter/);
  });

  it('turns non-2xx answers without an envelope, garbage and missing fields into provider_unavailable', async () => {
    for (const answer of [
      { status: 502, body: '<html>bad gateway</html>' },
      { status: 200, body: '{"ref": "x", "sandboxId"' },
      { status: 200, body: '{"ref": "x"}' },
    ]) {
      reply = () => answer;
      const error = await failure(client().get('x'));
      expect(error.code, answer.body).toBe('provider_unavailable');
    }
  });

  it('passes envelope codes through, treats a missing instance on delete as success, hides rejected tokens', async () => {
    reply = () => ({
      status: 409,
      body: JSON.stringify({ error: { code: 'invalid_state', message: 'paused', details: {} } }),
    });
    expect((await failure(client().exec('x', { command: 'true' }))).code).toBe('invalid_state');
    reply = () => ({
      status: 404,
      body: JSON.stringify({ error: { code: 'not_found', message: 'gone', details: {} } }),
    });
    await expect(client().delete('x')).resolves.toBeUndefined();
    reply = () => ({
      status: 401,
      body: JSON.stringify({ error: { code: 'unauthenticated', message: 'no', details: {} } }),
    });
    const refused = await failure(client('very-secret-token').health());
    expect(refused.code).toBe('provider_unavailable');
    expect(JSON.stringify(refused) + refused.message).not.toContain('very-secret-token');
  });

  it('fails a stream without its final event, and a stream line over 8 MiB', async () => {
    reply = () => ({ status: 200, body: '{"stream":"stdout","data":"a"}\n' });
    const events: unknown[] = [];
    expect(
      (
        await failure(
          client().execStream('x', { command: 'y' }, (e) => {
            events.push(e);
          }),
        )
      ).message,
    ).toMatch(/without its final event/);
    expect(events).toEqual([{ stream: 'stdout', data: 'a' }]);
    reply = () => ({
      status: 200,
      body: `{"stream":"stdout","data":"${'a'.repeat(8 * 1024 * 1024 + 10)}"}\n{"exitCode":0}\n`,
    });
    expect((await failure(client().execStream('x', { command: 'y' }, () => undefined))).message).toMatch(
      /longer than/,
    );
    reply = () => ({ status: 200, body: '{"stream":"stderr","data":"w"}\n{"error":"the VM died"}\n' });
    expect((await failure(client().execStream('x', { command: 'y' }, () => undefined))).message).toMatch(
      /the VM died/,
    );
  });

  it('reports an unreachable endpoint as provider_unavailable naming it', async () => {
    const gone = new RemoteAdapter(remoteConfigSchema.parse({ endpoint: 'http://127.0.0.1:1' }));
    const error = await failure(gone.health());
    expect(error.code).toBe('provider_unavailable');
    expect(error.message).toContain('http://127.0.0.1:1');
  });
});
