import { Configuration, FileSystemApi } from '@daytona/toolbox-api-client';
import { Daytona, type Sandbox } from '@daytonaio/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DaytonaFake } from '../fakes/daytona-server.ts';

/**
 * Daytona's own published clients (@daytonaio/sdk and the toolbox client it is built on, pinned) against
 * the fake, for every operation the adapter uses: create and wait for started, get, list by labels, exec,
 * sessions (create, an async command fed through its input, its logs and state, list, delete), the
 * toolbox file routes the adapter calls (upload-v2, download, list) and the SDK's own bulk upload and
 * download, stop/start, snapshot by name then delete by id, delete.
 */
const apiKey = 'dtn-contract-key';

describe('the Daytona fake, as the official clients read it', () => {
  const fake = new DaytonaFake({ apiKey });
  let daytona: Daytona;
  let sandbox: Sandbox;
  const toolboxFiles = () =>
    new FileSystemApi(
      new Configuration({
        basePath: `${sandbox.toolboxProxyUrl}/${sandbox.id}`,
        baseOptions: { headers: { Authorization: `Bearer ${apiKey}` } },
      }),
    );

  beforeAll(async () => {
    await fake.start();
    daytona = new Daytona({ apiKey, apiUrl: `${fake.url}/api`, target: 'us' });
    sandbox = await daytona.create(
      { labels: { team: 'contract' }, envVars: { GREETING: 'hello' } },
      { timeout: 60 },
    );
  });
  afterAll(async () => {
    await fake.stop();
  });

  it('creates a sandbox and waits until it is started', async () => {
    expect(sandbox.state).toBe('started');
    const again = await daytona.get(sandbox.id);
    expect(again.id).toBe(sandbox.id);
    expect(again.labels.team).toBe('contract');
  });

  it('runs a command (stdout and stderr merged, exit code)', async () => {
    const ok = await sandbox.process.executeCommand('echo "$GREETING" out; echo err >&2');
    expect(ok.exitCode).toBe(0);
    expect(ok.result).toContain('hello out');
    expect(ok.result).toContain('err');
    expect((await sandbox.process.executeCommand('exit 4')).exitCode).toBe(4);
  });

  it('uploads, downloads and lists files on the toolbox routes the adapter uses', async () => {
    const files = toolboxFiles();
    const uploaded = await files.uploadFile('/work/notes.txt', new File(['contract text'], 'notes.txt'));
    expect(uploaded.data).toMatchObject({ path: '/work/notes.txt' });
    const downloaded = await files.downloadFile('/work/notes.txt', { responseType: 'arraybuffer' });
    expect(Buffer.from(downloaded.data as unknown as ArrayBuffer).toString()).toBe('contract text');
    const listed = await sandbox.fs.listFiles('/work');
    expect(listed.map((f) => f.name)).toContain('notes.txt');
    expect(listed.find((f) => f.name === 'notes.txt')).toMatchObject({ isDir: false, size: 13 });
  });

  it("uploads and downloads with the SDK's own bulk calls", async () => {
    await sandbox.fs.uploadFile(Buffer.from('bulk text'), '/work/bulk.txt');
    expect((await sandbox.fs.downloadFile('/work/bulk.txt')).toString()).toBe('bulk text');
    await expect(sandbox.fs.downloadFile('/work/missing.txt')).rejects.toThrow(/not found/);
  });

  it('lists sandboxes by labels', async () => {
    const found: string[] = [];
    for await (const s of daytona.list({ labels: { team: 'contract' } })) found.push(s.id);
    expect(found).toEqual([sandbox.id]);
    const none: string[] = [];
    for await (const s of daytona.list({ labels: { team: 'nobody' } })) none.push(s.id);
    expect(none).toEqual([]);
  });

  it('runs a session command fed through its input, as the SDK drives sessions', async () => {
    await sandbox.process.createSession('contract-session');
    await expect(sandbox.process.createSession('contract-session')).rejects.toThrow(/exists/);
    const started = await sandbox.process.executeSessionCommand('contract-session', {
      command: 'while IFS= read -r line; do echo "got:$line"; echo "err:$line" >&2; done',
      runAsync: true,
      suppressInputEcho: true,
    });
    expect(started.cmdId).toMatch(/./);
    // Input without a newline gains one: a reader of lines sees it at once.
    await sandbox.process.sendSessionCommandInput('contract-session', started.cmdId, 'one');
    await expect
      .poll(async () => sandbox.process.getSessionCommandLogs('contract-session', started.cmdId), {
        timeout: 10_000,
      })
      .toMatchObject({ stdout: 'got:one\n', stderr: 'err:one\n' });
    expect(
      (await sandbox.process.getSessionCommand('contract-session', started.cmdId)).exitCode,
    ).toBeUndefined();
    const sessions = await sandbox.process.listSessions();
    expect(sessions.find((s) => s.sessionId === 'contract-session')?.commands?.[0]).toMatchObject({
      id: started.cmdId,
    });
    // A synchronous command in another session answers with its output and exit code.
    await sandbox.process.createSession('contract-sync');
    const sync = await sandbox.process.executeSessionCommand('contract-sync', {
      command: 'echo done; exit 3',
    });
    expect(sync).toMatchObject({ exitCode: 3, stdout: 'done\n' });
    await expect(
      sandbox.process.sendSessionCommandInput('contract-sync', sync.cmdId, 'late'),
    ).rejects.toThrow(/completed/);
    await sandbox.process.deleteSession('contract-session');
    await sandbox.process.deleteSession('contract-sync');
    await expect(sandbox.process.getSession('contract-session')).rejects.toThrow(/not found/);
  });

  it('stops and starts', async () => {
    await sandbox.stop(60);
    expect(sandbox.state).toBe('stopped');
    await sandbox.start(60);
    expect(sandbox.state).toBe('started');
    expect((await sandbox.process.executeCommand('cat /work/notes.txt')).result).toBe('contract text');
  });

  it('takes a snapshot by name, starts from it and deletes it by id', async () => {
    await sandbox.createSnapshot('contract-snap', 60);
    const snapshot = await daytona.snapshot.get('contract-snap');
    expect(snapshot.name).toBe('contract-snap');
    const restored = await daytona.create({ snapshot: 'contract-snap' }, { timeout: 60 });
    expect((await restored.process.executeCommand('cat /work/notes.txt')).result).toBe('contract text');
    await restored.delete(60, true);
    await daytona.snapshot.delete(snapshot);
    await expect(daytona.snapshot.get('contract-snap')).rejects.toThrow(/not found/);
  });

  it('deletes the sandbox', async () => {
    await sandbox.delete(60, true);
    await expect(daytona.get(sandbox.id)).rejects.toThrow(/not found/);
  });

  it('takes the network limits the adapter sends (block-all, an IPv4 CIDR allow-list) and refuses what Daytona refuses', async () => {
    const blocked = await daytona.create({ networkBlockAll: true }, { timeout: 60 });
    expect(blocked.networkBlockAll).toBe(true);
    const listed = await daytona.create(
      { networkAllowList: '203.0.113.0/24,198.51.100.7/32' },
      { timeout: 60 },
    );
    expect((await daytona.get(listed.id)).networkAllowList).toBe('203.0.113.0/24,198.51.100.7/32');
    await expect(daytona.create({ networkAllowList: 'pypi.org' }, { timeout: 60 })).rejects.toThrow(
      /not an IPv4 CIDR block/,
    );
    for (const one of [blocked, listed]) await daytona.delete(one);
  });
});
