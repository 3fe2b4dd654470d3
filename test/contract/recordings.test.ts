import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSandboxConfigSchema } from '../../adapters/opensandbox/config.ts';
import { OpenSandboxAdapter } from '../../adapters/opensandbox/opensandbox-adapter.ts';
import { DaytonaFake } from '../fakes/daytona-server.ts';
import type { FakeProvider } from '../fakes/fake-http.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import { createRequest } from '../helpers/adapter-calls.ts';
import { ExchangeRecorder, type Recording, recordingSchema } from '../recordings/recorder.ts';
import { replayProblems } from '../recordings/replay.ts';

const recordingsFolder = join(dirname(fileURLToPath(import.meta.url)), '..', 'recordings');

/** Each provider's fake, and how a replay reaches it as the adapter reached the service. */
const providers: {
  name: string;
  fake: (key: string) => FakeProvider;
  target: (fake: FakeProvider, key: string) => { baseUrl: string; headers: Record<string, string> };
}[] = [
  {
    name: 'opensandbox',
    fake: (apiKey) => new OpenSandboxFake({ apiKey }),
    target: (fake, key) => ({ baseUrl: fake.url, headers: { 'open-sandbox-api-key': key } }),
  },
  {
    name: 'daytona',
    fake: (apiKey) => new DaytonaFake({ apiKey }),
    target: (fake, key) => ({ baseUrl: `${fake.url}/api`, headers: { authorization: `Bearer ${key}` } }),
  },
  {
    name: 'freestyle',
    fake: (apiKey) => new FreestyleFake({ apiKey }),
    target: (fake, key) => ({ baseUrl: fake.url, headers: { authorization: `Bearer ${key}` } }),
  },
];

function recordingsOf(provider: string): string[] {
  try {
    return readdirSync(join(recordingsFolder, provider)).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
}

describe('the fakes, held to the recordings of the real services', () => {
  for (const provider of providers) {
    const files = recordingsOf(provider.name);
    if (files.length === 0)
      it.skip(`${provider.name}: no recordings yet (DIFFERENTLY_RECORD=1 with the live variables, docs/testing.md)`, () => {});
    for (const file of files)
      it(`${provider.name}: answers as recorded in ${file}`, async () => {
        const recording = recordingSchema.parse(
          JSON.parse(readFileSync(join(recordingsFolder, provider.name, file), 'utf8')),
        );
        const fake = await provider.fake('replay-key').start();
        try {
          expect(await replayProblems(recording, provider.target(fake, 'replay-key'))).toEqual([]);
        } finally {
          await fake.stop();
        }
      });
  }
});

describe('the replay', () => {
  const key = 'os-replay-key-0123456789';
  let recording: Recording;

  // A recording made the way a live run makes one, here of the fake itself, so the replay's own
  // checks can be seen to pass on a faithful answer and fail on each kind of difference.
  beforeAll(async () => {
    const fake = await new OpenSandboxFake({ apiKey: key }).start();
    const recorder = new ExchangeRecorder({ provider: 'opensandbox', baseUrl: fake.url, secrets: [key] });
    const adapter = new OpenSandboxAdapter(
      openSandboxConfigSchema.parse({ apiURL: fake.url, pollIntervalMs: 10, readyTimeoutSeconds: 10 }),
      key,
      undefined,
      recorder.fetch,
    );
    const instance = await adapter.create(
      createRequest({ env: { A: '1' }, labels: { team: 'replay' }, ttlSeconds: 600 }),
    );
    await adapter.exec(instance.ref, { command: 'echo hi' });
    await adapter.writeFile(instance.ref, '/work/a.txt', new TextEncoder().encode('a'));
    await adapter.readFile(instance.ref, '/work/a.txt');
    await adapter.listFiles(instance.ref, '/work');
    await adapter.delete(instance.ref);
    recording = await recorder.recording();
    await fake.stop();
  });

  const replayOnFreshFake = async (changed: Recording) => {
    const fake = await new OpenSandboxFake({ apiKey: 'another-key' }).start();
    try {
      return await replayProblems(changed, {
        baseUrl: fake.url,
        headers: { 'open-sandbox-api-key': 'another-key' },
      });
    } finally {
      await fake.stop();
    }
  };

  it('passes a fake that answers as recorded, ids and endpoints learned on the way', async () => {
    expect(recording.exchanges.length).toBeGreaterThan(8);
    expect(recording.exchanges.some((e) => e.request.url.includes('/execd/'))).toBe(true);
    expect(await replayOnFreshFake(recording)).toEqual([]);
  });

  it("waits for the fake's clock on a read the service answered ready at once", async () => {
    // As if the service had been running by the first read: only the last of each run of reads is kept.
    const changed = structuredClone(recording);
    changed.exchanges = changed.exchanges.filter((exchange, i) => {
      const next = changed.exchanges[i + 1];
      return !(
        next !== undefined &&
        next.request.method === 'GET' &&
        next.request.url === exchange.request.url
      );
    });
    expect(await replayOnFreshFake(changed)).toEqual([]);
  });

  it('fails a fake that leaves out a field the service sent', async () => {
    const changed = structuredClone(recording);
    const get = changed.exchanges.findLast(
      (e) => e.request.method === 'GET' && /\/v1\/sandboxes\/[^/]+$/.test(e.request.url),
    );
    if (get?.response.body === undefined || !('text' in get.response.body))
      throw new Error('no sandbox read recorded');
    get.response.body.text = JSON.stringify({
      ...JSON.parse(get.response.body.text),
      platform: { os: 'linux' },
    });
    expect(await replayOnFreshFake(changed)).toEqual([
      expect.stringMatching(/platform is missing in the fake/),
    ]);
  });

  it('fails a fake whose status or field types differ', async () => {
    const changed = structuredClone(recording);
    const create = changed.exchanges.find(
      (e) => e.request.method === 'POST' && e.request.url.endsWith('/v1/sandboxes'),
    );
    if (create?.response.body === undefined || !('text' in create.response.body))
      throw new Error('no create recorded');
    create.response.body.text = JSON.stringify({
      ...JSON.parse(create.response.body.text),
      createdAt: 1700000000,
    });
    const removal = changed.exchanges.find((e) => e.request.method === 'DELETE');
    if (removal === undefined) throw new Error('no delete recorded');
    removal.response.status = 202;
    const problems = await replayOnFreshFake(changed);
    expect(problems).toContainEqual(
      expect.stringMatching(/createdAt is string in the fake, number from the service/),
    );
    expect(problems).toContainEqual(expect.stringMatching(/DELETE .*status 204, the service answered 202/));
  });
});

describe('the recorder', () => {
  const key = 'sk-Live_Key+42/xyz';
  const handedOut = 'tok-7f3a9c2e5b1d';
  let upstream: ReturnType<typeof createServer>;
  let base = '';
  let folder = '';

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'recording-'));
    // A service that echoes the credential back in every way one could, and hands out a token of its own.
    upstream = createServer((req, res) => {
      const basic = Buffer.from(`user:${key}`).toString('base64');
      if (req.url?.startsWith('/session')) {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `sid=${handedOut}` });
        res.end(
          JSON.stringify({
            session: { accessToken: handedOut },
            url: `https://proxy.example/${handedOut}/x`,
          }),
        );
        return;
      }
      if (req.url?.startsWith('/binary')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.concat([Buffer.from([0, 255, 1]), Buffer.from(key), Buffer.from([254, 0])]));
        return;
      }
      res.writeHead(401, {
        'content-type': 'application/json',
        'x-echo': key,
        'www-authenticate': `Basic ${basic}`,
      });
      res.end(
        JSON.stringify({
          message: `bad key ${key} (${key.toUpperCase()}) ${encodeURIComponent(key)}`,
          hex: Buffer.from(key).toString('hex').toUpperCase(),
          b64: Buffer.from(key).toString('base64'),
          b64url: `Bearer ${Buffer.from(key).toString('base64url')}`,
          basic,
          apiKey: 'a-different-credential-value',
          escaped: [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
        }).replace(/\\\\u/g, '\\u'),
      );
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    upstream.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('writes no key or token in any recorded form', async () => {
    const recorder = new ExchangeRecorder({ provider: 'echo', baseUrl: base, secrets: [key] });
    const call = recorder.fetch;
    await call(`${base}/session`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    await call(`${base}/echo?token=${handedOut}&key=${encodeURIComponent(key)}`, {
      method: 'POST',
      headers: {
        'open-sandbox-api-key': key,
        'x-trace': `user ${key}`,
        cookie: `sid=${handedOut}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ password: 'p4ssw0rd-value', note: `use ${handedOut} with ${key}` }),
    });
    await call(`${base}/binary/${handedOut}`, {
      headers: { authorization: `Basic ${Buffer.from(`me:${key}`).toString('base64')}` },
    });
    const file = join(folder, 'echo.json');
    await recorder.save(file);
    const written = await readFile(file, 'utf8');
    // Every form, as an independent list (not the redactor's own).
    const forms = (secret: string) => {
      const bytes = Buffer.from(secret);
      return [
        secret,
        secret.toUpperCase(),
        secret.toLowerCase(),
        encodeURIComponent(secret),
        bytes.toString('hex'),
        bytes.toString('hex').toUpperCase(),
        bytes.toString('base64'),
        bytes.toString('base64url'),
        Buffer.from(`user:${secret}`).toString('base64'),
        Buffer.from(`me:${secret}`).toString('base64'),
        [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      ];
    };
    for (const secret of [key, handedOut, 'p4ssw0rd-value', 'a-different-credential-value'])
      for (const form of forms(secret)) expect(written, `${secret} as ${form}`).not.toContain(form);
    // The binary body, kept as base64, was redacted inside too.
    const recording = recordingSchema.parse(JSON.parse(written));
    const binary = recording.exchanges[2]?.response.body;
    expect(binary !== undefined && 'base64' in binary).toBe(true);
    if (binary !== undefined && 'base64' in binary)
      expect(Buffer.from(binary.base64, 'base64').toString('latin1')).not.toContain(key);
    // What is not a credential is kept, so the recording still says what happened.
    expect(recording.exchanges.map((e) => e.response.status)).toEqual([200, 401, 200]);
    expect(written).toContain('bad key');
    expect(written).toContain('/echo?');
  });
});
