import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import type { CreateRequest } from '../../../lib/adapter/port.ts';
import { ApiError, errors } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';

function request(overrides: Partial<CreateRequest> = {}): CreateRequest {
  return {
    id: newId('sandbox'),
    installation: 'inst_test',
    resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
    env: {},
    labels: {},
    ...overrides,
  };
}

describe('FakeAdapter', () => {
  it('is idempotent on the sandbox id', async () => {
    const fake = new FakeAdapter();
    const req = request();
    const first = await fake.create(req);
    const second = await fake.create(req);
    expect(second.ref).toBe(first.ref);
    expect(fake.instanceCount()).toBe(1);
  });

  it('keeps one instance when the first Create response was lost', async () => {
    const fake = new FakeAdapter();
    const req = request();
    fake.inject('create', { error: errors.providerUnavailable('connection reset'), afterEffect: true });
    await expect(fake.create(req)).rejects.toMatchObject({ code: 'provider_unavailable' });
    const retried = await fake.create(req);
    expect(fake.instanceCount()).toBe(1);
    expect(retried.sandboxId).toBe(req.id);
  });

  it('injects a failure for the given number of calls only', async () => {
    const fake = new FakeAdapter();
    fake.inject('create', { error: errors.insufficientCapacity('full'), times: 2 });
    await expect(fake.create(request())).rejects.toMatchObject({ code: 'insufficient_capacity' });
    await expect(fake.create(request())).rejects.toMatchObject({ code: 'insufficient_capacity' });
    await expect(fake.create(request())).resolves.toMatchObject({ state: 'running' });
    expect(fake.calls.get('create')).toBe(3);
  });

  it('lists only the installation’s instances and deletes idempotently', async () => {
    const fake = new FakeAdapter();
    const mine = await fake.create(request());
    await fake.create(request({ installation: 'inst_other' }));
    expect((await fake.list('inst_test')).map((i) => i.ref)).toEqual([mine.ref]);
    await fake.delete(mine.ref);
    await fake.delete(mine.ref);
    await expect(fake.get(mine.ref)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('echoes by default and runs a configured ExecFunc', async () => {
    const fake = new FakeAdapter();
    const { ref } = await fake.create(request());
    expect(await fake.exec(ref, { command: 'echo hi' })).toMatchObject({ exitCode: 0, stdout: 'echo hi\n' });
    fake.setExec((req) => ({
      exitCode: 7,
      stdout: '',
      stderr: `${req.args?.length}`,
      durationMs: 1,
      truncated: false,
      timedOut: false,
    }));
    expect(await fake.exec(ref, { args: ['a', 'b'] })).toMatchObject({ exitCode: 7, stderr: '2' });
  });

  it('refuses exec on a paused instance with invalid_state', async () => {
    const fake = new FakeAdapter();
    const { ref } = await fake.create(request());
    await fake.pause(ref);
    const error = await fake.exec(ref, { command: 'true' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'invalid_state', details: { state: 'paused' } });
  });

  it('reports bounded capacity from the instances it holds', async () => {
    const fake = new FakeAdapter({ totalCPU: 4, totalMemoryMiB: 4096 });
    await fake.create(request({ resources: { cpu: 3, memoryMiB: 1024, diskGiB: 1 } }));
    expect(await fake.capacity()).toMatchObject({
      bounded: true,
      largestFreeCPU: 1,
      largestFreeMemoryMiB: 3072,
    });
  });

  it('restores files from a snapshot', async () => {
    const fake = new FakeAdapter();
    const { ref } = await fake.create(request());
    await fake.writeFile(ref, '/work/a.txt', new TextEncoder().encode('kept'));
    const snapshot = await fake.snapshot(ref, 'disk');
    const child = await fake.create(request({ fromSnapshot: snapshot.ref }));
    expect(new TextDecoder().decode(await fake.readFile(child.ref, '/work/a.txt'))).toBe('kept');
    expect(await fake.listFiles(child.ref, '/work')).toEqual([
      { name: 'a.txt', path: '/work/a.txt', isDir: false, size: 4 },
    ]);
  });
});
