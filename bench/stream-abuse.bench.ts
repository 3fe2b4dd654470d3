/**
 * Streamed exec under abuse (npm run bench): the server's memory while a client holds a 200 MB stream
 * without reading it, as a ratio to its memory before (goal <= 1.5: backpressure makes the command wait,
 * not the server buffer), and the processes left 5 s after 20 clients disconnected from running streams
 * (goal 0: a disconnect cancels the command). Clients run in their own processes, as real ones do.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { parseConfig } from '../lib/config.ts';
import { printTable } from './stats.ts';

const outputLine = z.object({ data: z.string() });
const root = await mkdtemp(join(tmpdir(), 'stream-abuse-bench-'));
const runtime = await startLocalRuntime({
  // Host processes (isolation none): the leftover count below reads `$$` as a host pid, which inside a
  // bubblewrap jail would be a pid of the jail's own namespace.
  config: parseConfig({
    devMode: true,
    pools: [{ name: 'local', adapter: 'devhost', config: { root, isolation: 'none' } }],
  }),
  sweepIntervalSeconds: 0,
  reconcileIntervalSeconds: 0,
  poolRefreshIntervalSeconds: 0,
});

/** A client process that starts a streamed exec, prints the first line it gets, then does `then`. */
function client(url: string, key: string, command: string, then: 'hold' | 'disconnect'): ChildProcess {
  const code = `
    const response = await fetch(${JSON.stringify(url)}, {
      method: 'POST',
      headers: { authorization: ${JSON.stringify(`Bearer ${key}`)}, 'content-type': 'application/json' },
      body: ${JSON.stringify(JSON.stringify({ command }))},
    });
    const reader = response.body.getReader();
    let text = '';
    while (!text.includes('\\n')) text += new TextDecoder().decode((await reader.read()).value);
    process.stdout.write(text.split('\\n')[0] + '\\n');
    if (${JSON.stringify(then)} === 'disconnect') process.exit(0);
    setInterval(() => {}, 1000); // holds the stream open, reading nothing more`;
  return spawn(process.execPath, ['--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
    });
    // 'close' comes after the output is read: a client that printed nothing failed.
    child.once('close', (status) => {
      if (!out.includes('\n')) reject(new Error(`client exited ${status} without output`));
    });
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

try {
  const org = await runtime.plane.tenancy.createOrg({ name: 'bench' });
  const { key } = await runtime.plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  const principal = { kind: 'org', orgId: org.id, keyId: 'key_x', role: 'member', projectId: null } as const;
  const { sandbox } = await runtime.plane.sandboxes.create(principal, {
    placement: { allowedPools: ['local'] },
  });
  while ((await runtime.plane.store.getSandbox(org.id, sandbox.id))?.status !== 'running')
    await new Promise((resolve) => setTimeout(resolve, 10));
  const url = `${runtime.url}/v1/sandboxes/${sandbox.id}/exec?stream=1`;

  // Memory while a client holds a 200 MB stream unread.
  const idle = process.memoryUsage().rss;
  const holder = client(url, key, "head -c 200000000 /dev/zero | tr '\\0' a", 'hold');
  await firstLine(holder);
  let peak = idle;
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  holder.kill('SIGKILL');

  // Processes left after 20 clients disconnect from running streams.
  const pids: number[] = [];
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      const line = await firstLine(client(url, key, 'echo $$; sleep 300', 'disconnect'));
      pids.push(Number(outputLine.parse(JSON.parse(line)).data.trim()));
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const left = pids.filter(alive).length;
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone, group and all.
    }
  }

  printTable(
    'Streamed exec under abuse (devhost pool, clients in their own processes)',
    ['figure', 'value', 'reference', 'ratio / goal'],
    [
      [
        'server RSS while a client holds a 200 MB stream unread (MB)',
        (peak / 1e6).toFixed(1),
        `idle ${(idle / 1e6).toFixed(1)}`,
        `${(peak / idle).toFixed(2)} (goal <= 1.5)`,
      ],
      ['processes left 5 s after 20 disconnected streams', String(left), '20 started', `${left} (goal 0)`],
    ],
  );
} finally {
  await runtime.stop();
  await rm(root, { recursive: true, force: true });
}
