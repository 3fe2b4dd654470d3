import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaMicrovmsConfigSchema } from '../../../adapters/lambda-microvms/config.ts';
import { LambdaMicrovmsAdapter } from '../../../adapters/lambda-microvms/lambda-microvms-adapter.ts';
import type { CreateRequest } from '../../../lib/adapter/port.ts';
import { newId } from '../../../lib/ids.ts';
import { LambdaMicrovmsFake } from '../../fakes/lambda-microvms-server.ts';
import { fakeAccessKeyId, fakeImage as image, microvmsClient } from '../../helpers/lambda-microvms.ts';

const installation = newId('installation');
const resources = { cpu: 1, memoryMiB: 512, diskGiB: 1 };

/** A create request for a fresh sandbox of the test's installation. */
function sandbox(extra: Partial<CreateRequest> = {}): CreateRequest {
  return { id: newId('sandbox'), installation, resources, env: {}, labels: {}, ...extra };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return (error as { code?: string }).code ?? `thrown: ${(error as Error).message}`;
  }
}

describe('the lambda-microvms adapter against the fake service', () => {
  const fake = new LambdaMicrovmsFake({
    images: [image],
    accessKeyId: fakeAccessKeyId,
    versions: ['1.0', '2.0'],
  });
  let adapter: LambdaMicrovmsAdapter;
  const adapterWith = (config: Record<string, unknown>) =>
    new LambdaMicrovmsAdapter(
      lambdaMicrovmsConfigSchema.parse({ image, pollIntervalMs: 20, readyTimeoutSeconds: 20, ...config }),
      { client: microvmsClient(fake.url) },
    );

  beforeAll(async () => {
    await fake.start();
    adapter = adapterWith({});
  });
  afterAll(() => fake.stop());

  it('classifies what the service answers: throttling and quotas as capacity, validation as the request, the rest as an outage', async () => {
    const cases: [number, string, string][] = [
      [429, 'ThrottlingException', 'insufficient_capacity'],
      [429, 'TooManyRequestsException', 'insufficient_capacity'],
      [402, 'ServiceQuotaExceededException', 'insufficient_capacity'],
      [500, 'InsufficientCapacityException', 'insufficient_capacity'],
      [400, 'ValidationException', 'invalid_request'],
      [400, 'InvalidParameterValueException', 'invalid_request'],
      [403, 'AccessDeniedException', 'provider_unavailable'],
      [500, 'InternalServerException', 'provider_unavailable'],
      [500, 'ServiceException', 'provider_unavailable'],
    ];
    for (const [status, type, code] of cases) {
      fake.faults.failRun = { status, type };
      const id = newId('sandbox');
      expect(await codeOf(adapter.create(sandbox({ id }))), type).toBe(code);
    }
    // An image that does not exist is the pool's configuration at fault, not a missing instance.
    const missing = adapterWith({ image: `${image}-gone` });
    expect(await codeOf(missing.create(sandbox()))).toBe('invalid_request');
  });

  it('is healthy only when its image can run: it exists, is not failed or deleted, and has a built version', async () => {
    await expect(adapter.health()).resolves.toBeUndefined();
    await expect(adapterWith({ imageVersion: '2.0' }).health()).resolves.toBeUndefined();
    const refusals = async (config: Record<string, unknown>) => {
      const error = await adapterWith(config)
        .health()
        .then(
          () => undefined,
          (e: unknown) => e as { code?: string; message?: string },
        );
      return `${error?.code}: ${error?.message}`;
    };
    expect(await refusals({ image: `${image}-gone` })).toMatch(
      /^provider_unavailable: .*-gone does not exist$/,
    );
    expect(await refusals({ imageVersion: '9.9' })).toMatch(/has no version 9\.9$/);
    fake.imageStates.set(image, 'CREATE_FAILED');
    try {
      expect(await refusals({})).toMatch(/is CREATE_FAILED$/);
      expect(await refusals({ imageVersion: '1.0' })).toMatch(/is CREATE_FAILED$/);
    } finally {
      fake.imageStates.delete(image);
    }
  });

  it('runs each VM with the pool settings, the sandbox id as clientToken and a lifetime of at most 8 hours', async () => {
    const configured = adapterWith({
      imageVersion: '1.0',
      executionRoleArn: 'arn:aws:iam::123456789012:role/differently-sandboxes',
      idlePolicy: { maxIdleDurationSeconds: 900, suspendedDurationSeconds: 1800, autoResumeEnabled: true },
      egressNetworkConnectors: [
        'arn:aws:lambda:us-east-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS',
      ],
    });
    const long = newId('sandbox');
    const endless = newId('sandbox');
    fake.received.run.length = 0;
    const a = await configured.create(sandbox({ id: long, ttlSeconds: 100_000 }));
    const b = await configured.create(sandbox({ id: endless }));
    expect(fake.received.run).toEqual([
      {
        clientToken: long,
        imageIdentifier: image,
        imageVersion: '1.0',
        executionRoleArn: 'arn:aws:iam::123456789012:role/differently-sandboxes',
        idlePolicy: { maxIdleDurationSeconds: 900, suspendedDurationSeconds: 1800, autoResumeEnabled: true },
        egressNetworkConnectors: [
          'arn:aws:lambda:us-east-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS',
        ],
        maximumDurationInSeconds: 28_800,
      },
      expect.objectContaining({ clientToken: endless, maximumDurationInSeconds: 28_800 }),
    ]);
    await configured.delete(a.ref);
    await configured.delete(b.ref);
  });

  it('ends a sandbox at its TTL through the VM lifetime, even with the control plane gone', async () => {
    // The VM is given the TTL as its maximum duration; that duration running out is the fake's to
    // simulate (a 1-second TTL could run out before a loaded machine's guest agent even answered).
    const instance = await adapter.create(sandbox({ ttlSeconds: 90 }));
    expect(fake.vms.get(instance.ref)?.maximumDurationInSeconds).toBe(90);
    await fake.reachMaximumDuration(instance.ref);
    await expect
      .poll(() => codeOf(adapter.get(instance.ref)), { timeout: 10_000, interval: 50 })
      .toBe('not_found');
    expect(fake.vms.get(instance.ref)?.stateReason).toBe('maximum duration reached');
  });

  it('mints a new auth token when the endpoint refuses the one it holds', async () => {
    const instance = await adapter.create(sandbox());
    const minted = () => fake.received.calls.filter((call) => call === 'POST microvm/auth-token').length;
    const before = minted();
    expect((await adapter.exec(instance.ref, { command: 'echo one' })).stdout).toBe('one\n');
    // The held token is reused while it is valid.
    expect(minted()).toBe(before);
    fake.expireTokens();
    expect((await adapter.exec(instance.ref, { command: 'echo two' })).stdout).toBe('two\n');
    expect(minted()).toBe(before + 1);
    await adapter.delete(instance.ref);
  });

  it("lists a running VM only when its guest holds this installation's sandbox: another installation's VM of the same image is never listed", async () => {
    const ours = await adapter.create(sandbox());
    const theirs = await adapter.create(sandbox({ installation: newId('installation') }));
    const listed = (await adapter.list(installation)).map((i) => i.ref);
    expect(listed).toContain(ours.ref);
    expect(listed).not.toContain(theirs.ref);
    for (const vm of [ours, theirs]) await adapter.delete(vm.ref);
  });

  it('keeps a suspended VM listed, unnamed and paused, and its files across the suspend', async () => {
    const id = newId('sandbox');
    const instance = await adapter.create(sandbox({ id }));
    await adapter.writeFile(instance.ref, '/work/kept.txt', new TextEncoder().encode('kept'));
    await adapter.pause(instance.ref);
    expect((await adapter.get(instance.ref)).state).toBe('paused');
    expect((await adapter.list(installation)).find((i) => i.ref === instance.ref)).toEqual({
      ref: instance.ref,
      sandboxId: '',
      state: 'paused',
    });
    // A repeated suspend (a retried operation) finds the VM suspended: done, though the service refuses it.
    await adapter.pause(instance.ref);
    await adapter.resume(instance.ref);
    // A repeated resume finds it running: done too (the service answers ConflictException to both).
    await adapter.resume(instance.ref);
    expect((await adapter.list(installation)).find((i) => i.ref === instance.ref)?.sandboxId).toBe(id);
    expect(new TextDecoder().decode(await adapter.readFile(instance.ref, '/work/kept.txt'))).toBe('kept');
    await adapter.delete(instance.ref);
  });

  it('still refuses a resume of a VM that is neither suspended nor running', async () => {
    const instance = await adapter.create(sandbox({ id: newId('sandbox') }));
    await adapter.delete(instance.ref);
    await expect(adapter.resume(instance.ref)).rejects.toMatchObject({
      code: expect.stringMatching(/invalid_state|not_found/),
    });
  });

  it('resumes a VM its idle policy suspended under a running sandbox, and runs the call once', async () => {
    const idle = adapterWith({
      idlePolicy: { maxIdleDurationSeconds: 60, suspendedDurationSeconds: 3600, autoResumeEnabled: false },
    });
    const instance = await idle.create(sandbox());
    await idle.exec(instance.ref, { command: 'echo once >> /work/count' });
    await fake.idleSuspend(instance.ref);
    expect(
      (
        await idle.exec(instance.ref, { command: 'echo once >> /work/count; wc -l < /work/count' })
      ).stdout.trim(),
    ).toBe('2');
    expect(fake.vms.get(instance.ref)?.state).toBe('RUNNING');
    // A VM that ended is the instance gone, not an outage of the pool.
    fake.vms.get(instance.ref)?.process?.kill('SIGKILL');
    await expect.poll(() => fake.vms.get(instance.ref)?.state).toBe('TERMINATED');
    expect(await codeOf(idle.exec(instance.ref, { command: 'true' }))).toBe('not_found');
  });

  it('lists the VMs of every version of the image: a pool moved to a new version keeps its running sandboxes', async () => {
    const before = adapterWith({ imageVersion: '1.0' });
    const id = newId('sandbox');
    const instance = await before.create(sandbox({ id }));
    const after = adapterWith({ imageVersion: '2.0' });
    expect((await after.list(installation)).find((i) => i.ref === instance.ref)?.sandboxId).toBe(id);
    await after.delete(instance.ref);
  });

  it('takes a Terminate refused as a conflict for success only when the VM is ending', async () => {
    const instance = await adapter.create(sandbox());
    fake.faults.terminateConflict = true;
    try {
      expect(await codeOf(adapter.delete(instance.ref))).toBe('invalid_state');
      fake.faults.terminateConflict = false;
      await adapter.delete(instance.ref);
      fake.faults.terminateConflict = true;
      await expect(adapter.delete(instance.ref)).resolves.toBeUndefined();
    } finally {
      fake.faults.terminateConflict = false;
    }
  });

  it('holds one sandbox per VM: its guest refuses a second', async () => {
    const instance = await adapter.create(sandbox());
    const vm = fake.vms.get(instance.ref);
    const response = await fetch(`${vm?.endpoint}/adapter/v1/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-aws-proxy-auth': fake.tokenFor(instance.ref) },
      body: JSON.stringify({ id: newId('sandbox'), installation, resources, env: {}, labels: {} }),
    });
    expect(response.status).toBe(409);
    // And the endpoint admits nobody without a token.
    expect((await fetch(`${vm?.endpoint}/adapter/v1/health`)).status).toBe(403);
    await adapter.delete(instance.ref);
  });
});

/** The artifact examples/lambda-microvms builds (the bundled agent), run as the image of every VM. */
describe('the guest agent as the image ships it', () => {
  const out = mkdtempSync(join(tmpdir(), 'microvm-image-'));
  let fake: LambdaMicrovmsFake;

  beforeAll(async () => {
    execFileSync(process.execPath, ['examples/lambda-microvms/build.ts', '--out', out], { stdio: 'pipe' });
    fake = await new LambdaMicrovmsFake({
      images: [image],
      accessKeyId: fakeAccessKeyId,
      guest: [process.execPath, join(out, 'guest-agent.mjs')],
    }).start();
  });
  afterAll(async () => {
    await fake?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('builds a Dockerfile and one bundled file that serves a sandbox: exec, stream and files', async () => {
    expect(readdirSync(out).sort()).toEqual(['Dockerfile', 'guest-agent.mjs']);
    const adapter = new LambdaMicrovmsAdapter(
      lambdaMicrovmsConfigSchema.parse({ image, pollIntervalMs: 20, readyTimeoutSeconds: 20 }),
      { client: microvmsClient(fake.url) },
    );
    const instance = await adapter.create(sandbox({ env: { A: 'b' } }));
    expect((await adapter.exec(instance.ref, { command: 'echo "$A"' })).stdout).toBe('b\n');
    const seen: string[] = [];
    expect(
      await adapter.execStream(instance.ref, { command: 'echo x; exit 2' }, (e) => void seen.push(e.data)),
    ).toBe(2);
    expect(seen.join('')).toBe('x\n');
    await adapter.writeFile(instance.ref, '/work/f', new TextEncoder().encode('data'));
    expect(new TextDecoder().decode(await adapter.readFile(instance.ref, '/work/f'))).toBe('data');
    await adapter.delete(instance.ref);
  });

  it('answers the service lifecycle hooks once the agent listens, when given a hooks port', async () => {
    const root = mkdtempSync(join(tmpdir(), 'microvm-hooks-'));
    const agent = spawn(
      process.execPath,
      [
        join(out, 'guest-agent.mjs'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--root',
        root,
        '--hooks-port',
        '0',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      let hooksPort: number | undefined;
      for await (const line of createInterface({ input: agent.stdout })) {
        const match = /lifecycle hooks at port (\d+)/.exec(line);
        if (match !== null) {
          hooksPort = Number(match[1]);
          break;
        }
      }
      const hook = (path: string, method = 'POST') =>
        fetch(`http://127.0.0.1:${hooksPort}/aws/lambda-microvms/runtime/v1/${path}`, { method }).then(
          (r) => r.status,
        );
      expect(
        await Promise.all(['ready', 'validate', 'run', 'resume', 'suspend', 'terminate'].map((p) => hook(p))),
      ).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await hook('ready', 'GET')).toBe(404);
      expect(await hook('reboot')).toBe(404);
    } finally {
      const exited = new Promise((r) => agent.once('exit', r));
      agent.kill('SIGTERM');
      await exited;
      rmSync(root, { recursive: true, force: true });
    }
  });
});
