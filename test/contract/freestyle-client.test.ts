import { Freestyle } from 'freestyle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freestyleConfigSchema } from '../../adapters/freestyle/config.ts';
import { FreestyleAdapter } from '../../adapters/freestyle/freestyle-adapter.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { createRequest } from '../helpers/adapter-calls.ts';

/**
 * Freestyle's own published client (`freestyle`, pinned) against the fake, for every operation the
 * adapter uses: create with a firewall (every call of an API-key client goes through the background
 * protocol), get, list by metadata, exec-await, files (write with its sha256, read, list), pause/start,
 * snapshot, delete. Then the sandbox env as commands of any guest account see it.
 */
const apiKey = 'fs-contract-key';

/** A wait on the fake's state: it ends when the state is reached; the bound is only a safety net. */
const settled = { timeout: 20_000, interval: 20 };

describe('the Freestyle fake, as the official client reads it', () => {
  const fake = new FreestyleFake({ apiKey });
  let freestyle: Freestyle;
  let vmId: string;

  beforeAll(async () => {
    await fake.start();
    freestyle = new Freestyle({ apiKey, baseUrl: fake.url });
    const created = await freestyle.vms.create({
      firewall: { rules: [] },
      slug: 'contract-vm',
      metadata: { team: 'contract' },
      ttlSeconds: 900,
    });
    vmId = created.vmId;
  });
  afterAll(async () => {
    await fake.stop();
  });

  it('creates a VM and reads it back by id and by slug', async () => {
    await expect.poll(async () => (await freestyle.vms.get(vmId)).state, settled).toBe('running');
    expect((await freestyle.vms.get('contract-vm')).id).toBe(vmId);
  });

  it('runs a command: separate streams, the exit status, base64 stdin', async () => {
    const vm = freestyle.vms.ref(vmId);
    const ok = await vm.exec('echo out; echo err >&2');
    expect(ok).toMatchObject({ stdout: 'out\n', stderr: 'err\n', statusCode: 0 });
    expect((await vm.exec('exit 5')).statusCode).toBe(5);
    const piped = await vm.exec({ command: 'cat', stdin: Buffer.from('piped in').toString('base64') });
    expect(piped.stdout).toBe('piped in');
  });

  it('writes (with its sha256), reads and lists files', async () => {
    const vm = freestyle.vms.ref(vmId);
    await vm.fs.mkdir('/work/docs');
    await vm.fs.writeTextFile('/work/docs/notes.txt', 'contract text');
    expect(await vm.fs.readTextFile('/work/docs/notes.txt')).toBe('contract text');
    expect((await vm.fs.readDir('/work/docs')).map((e) => e.name)).toEqual(['notes.txt']);
    // Larger than a background request's stored result may be: the client reads it directly.
    const big = new Uint8Array(3 * 1024 * 1024).fill(7);
    await vm.fs.writeFile('/work/big.bin', big);
    expect(Buffer.from(await vm.fs.readFile('/work/big.bin')).equals(Buffer.from(big))).toBe(true);
  });

  it('lists VMs by metadata', async () => {
    const found = await freestyle.vms.list({ metadata: 'team:contract' });
    expect(found.vms.map((vm) => vm.id)).toEqual([vmId]);
    expect((await freestyle.vms.list({ metadata: 'team:nobody' })).vms).toEqual([]);
  });

  it('pauses and starts', async () => {
    const vm = freestyle.vms.ref(vmId);
    await vm.pause();
    await expect.poll(async () => (await vm.data()).state, settled).toBe('paused');
    await vm.start();
    await expect.poll(async () => (await vm.data()).state, settled).toBe('running');
  });

  it('snapshots, boots from the snapshot and deletes both', async () => {
    const snapshot = await freestyle.vms.ref(vmId).snapshot();
    const restored = await freestyle.vms.create({ firewall: { rules: [] }, snapshotId: snapshot.snapshotId });
    await expect.poll(async () => (await restored.vm.data()).state, settled).toBe('running');
    expect(await restored.vm.fs.readTextFile('/work/docs/notes.txt')).toBe('contract text');
    await restored.vm.delete();
    // The lookup finds it first, so that its failure after the delete says the delete happened.
    expect(await freestyle.vms.snapshots.get(snapshot.snapshotId)).toMatchObject({
      id: snapshot.snapshotId,
      sourceVmId: vmId,
      public: false,
    });
    await freestyle.vms.snapshots.delete(snapshot.snapshotId);
    await expect(freestyle.vms.snapshots.get(snapshot.snapshotId)).rejects.toThrow(/not found/i);
  });

  it('deletes the VM', async () => {
    await freestyle.vms.delete(vmId);
    await expect(freestyle.vms.get(vmId)).rejects.toThrow();
  });

  // Freestyle runs a command as the image's uid-1000 account unless it names another; its API writes as
  // root. Only a root host can run the fake's commands as another account.
  it.skipIf(!fake.host.switchesUser)(
    "gives the sandbox env to commands of the image's default account and of root",
    async () => {
      const adapter = new FreestyleAdapter(
        freestyleConfigSchema.parse({ apiURL: fake.url, pollIntervalMs: 10 }),
        apiKey,
      );
      const instance = await adapter.create(
        createRequest({ env: { GREETING: "it's here" }, ttlSeconds: 900 }),
      );
      const viaAdapter = await adapter.exec(instance.ref, { command: 'echo "$(id -u) $GREETING"' });
      expect(viaAdapter).toMatchObject({ exitCode: 0, stdout: "1000 it's here\n" });
      await adapter.writeFile(instance.ref, '/work/mine.txt', new TextEncoder().encode('readable'));
      expect((await adapter.exec(instance.ref, { command: 'cat /work/mine.txt' })).stdout).toBe('readable');
      const asRoot = await freestyle.vms
        .ref(instance.ref)
        .linuxUser('root')
        .exec('. /etc/differently/env && echo "$(id -u) $GREETING"');
      expect(asRoot.stdout).toBe("0 it's here\n");
      // An env file that cannot be read (a guest account locked it) fails the command loudly.
      await freestyle.vms.ref(instance.ref).linuxUser('root').exec('chmod 600 /etc/differently/env');
      const locked = await adapter.exec(instance.ref, { command: 'echo ran' });
      expect(locked.exitCode).not.toBe(0);
      expect(locked.stdout).not.toContain('ran');
      expect(locked.stderr).toMatch(/Permission denied|can't open/i);
      await adapter.delete(instance.ref);
    },
  );
});
