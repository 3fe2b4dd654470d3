import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = new URL('../../examples/plugins/python/plugin.py', import.meta.url).pathname;

export interface PythonPlugin {
  url: string;
  root: string;
  stop(): Promise<void>;
}

/**
 * The reference plugin of examples/plugins/python in a child process (python3, standard library only),
 * on a free port, with its instances under a fresh directory. Resolves once it listens.
 */
export async function startPythonPlugin(token: string): Promise<PythonPlugin> {
  const root = await mkdtemp(join(tmpdir(), 'python-plugin-'));
  const child: ChildProcess = spawn('python3', [script, '--port', '0', '--root', root], {
    env: { ...process.env, DIFFERENTLY_ADAPTER_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)\/adapter\/v1/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the python plugin exited with ${code}: ${out}`)));
    child.once('error', reject);
  });
  return {
    url,
    root,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      await rm(root, { recursive: true, force: true });
    },
  };
}
