import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { NotFoundError, type Result, Sandbox, TimeoutError } from '@e2b/code-interpreter';
import { interpreter } from '@llamaindex/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgKey, pointE2bAt } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * `@e2b/code-interpreter` (pinned, unmodified), configured only by E2B_API_URL and E2B_SANDBOX_URL, against
 * the local runtime (two containers per function): its default template `code-interpreter-v1` is mapped
 * in config, and its kernel runs in the devhost sandbox on the host's python3 (docs/e2b.md).
 */

/** Whether the sandbox's python3 (the host's, on devhost) has matplotlib: .ci/run installs Debian's. */
function hasMatplotlib(): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import matplotlib'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('the code interpreter, driven by @e2b/code-interpreter', () => {
  let e: E2e;
  let apiKey: string;
  let sandbox: Sandbox;

  beforeAll(async () => {
    e = await startE2e({
      config: {
        e2b: {
          allowedPools: ['local'],
          templates: { 'code-interpreter-v1': { capabilities: ['exec.stdin'] } },
        },
      },
    });
    pointE2bAt(e.runtime.url);
    apiKey = (await orgKey(e.runtime, 'interpreters')).e2bApiKey;
    sandbox = await Sandbox.create({ apiKey });
  }, 60_000);

  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await e?.stop();
  });

  it('creates the default template, mapped in config, and answers its name back', async () => {
    expect((await sandbox.getInfo()).templateId).toBe('code-interpreter-v1');
    // The mapping asked for the kernel's capability: the sandbox went where interactive processes are.
    const view = await fetch(`${e.runtime.url}/v1/sandboxes/${sandbox.sandboxId}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(await view.json()).toMatchObject({ capabilities: expect.arrayContaining(['exec.stdin']) });
  });

  it('runs Python: the last expression as the main result, stdout and stderr (a subprocess too), state kept between cells', async () => {
    const first = await sandbox.runCode(
      'x = 41\nprint("hello")\nimport sys; sys.stderr.write("warn\\n")\nimport os; os.system("echo from-shell")\nx + 1',
    );
    expect(first.text).toBe('42');
    expect(first.results).toHaveLength(1);
    expect(first.results[0]?.isMainResult).toBe(true);
    expect(first.logs.stdout.join('')).toBe('hello\nfrom-shell\n');
    expect(first.logs.stderr.join('')).toBe('warn\n');
    expect(first.error).toBeUndefined();
    const second = await sandbox.runCode('x * 2');
    expect(second.text).toBe('82');
    expect(second.executionCount).toBeGreaterThan(first.executionCount ?? 0);
    // A cell ending in a statement has no main result.
    expect((await sandbox.runCode('y = 1')).results).toEqual([]);
  });

  it('takes a cell larger than a process write, any text in it intact', async () => {
    const text = 'é😀'.repeat(40_000);
    const execution = await sandbox.runCode(`s = "${text}"\n(len(s), s == "é😀" * 40000)`);
    expect(execution.text).toBe('(80000, True)');
  });

  it('streams stdout and results to the callbacks as they come', async () => {
    const lines: string[] = [];
    const results: Result[] = [];
    const execution = await sandbox.runCode(
      'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)\n"done"',
      {
        onStdout: (output) => {
          lines.push(output.line);
        },
        onResult: (result) => {
          results.push(result);
        },
      },
    );
    expect(lines.join('')).toBe('0\n1\n2\n');
    // The main result's text is its repr, as IPython shows it.
    expect(results.map((result) => result.text)).toEqual(["'done'"]);
    expect(execution.text).toBe("'done'");
  });

  it('answers an error with its name, value and traceback, and a syntax error too', async () => {
    const errors: string[] = [];
    const execution = await sandbox.runCode('def f():\n    return 1 / 0\nf()', {
      onError: (error) => {
        errors.push(error.name);
      },
    });
    expect(execution.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(execution.error?.traceback).toContain('line 2, in f');
    expect(execution.error?.traceback).not.toContain('<string>');
    expect(errors).toEqual(['ZeroDivisionError']);
    const syntax = await sandbox.runCode('def broken(:\n    pass');
    expect(syntax.error?.name).toBe('SyntaxError');
    // The kernel lives on after both.
    expect((await sandbox.runCode('x')).text).toBe('41');
  });

  it('shows rich results through the display protocol, and matplotlib figures as PNG', async () => {
    const rich = await sandbox.runCode(
      'class Card:\n    def _repr_html_(self): return "<b>card</b>"\n    def _repr_markdown_(self): return "**card**"\n    def __repr__(self): return "Card()"\ndisplay("shown")\nCard()',
    );
    expect(rich.results.map((result) => [result.isMainResult, result.text])).toEqual([
      [false, "'shown'"],
      [true, 'Card()'],
    ]);
    expect(rich.results[1]).toMatchObject({ html: '<b>card</b>', markdown: '**card**' });
    expect(rich.results[1]?.formats()).toEqual(['html', 'markdown']);
    if (!hasMatplotlib()) {
      // Only where the sandbox lacks it (a developer machine without Debian's python3-matplotlib).
      expect(process.env.CI).toBeUndefined();
      return;
    }
    const plot = await sandbox.runCode(
      'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title("squares")\nplt.show()',
    );
    expect(plot.error).toBeUndefined();
    expect(plot.results).toHaveLength(1);
    expect(Buffer.from(plot.results[0]?.png ?? '', 'base64').subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
  });

  it('sets envs for one cell only', async () => {
    const withEnv = await sandbox.runCode('import os\nos.environ.get("STAGE")', { envs: { STAGE: 'test' } });
    expect(withEnv.text).toBe("'test'");
    expect((await sandbox.runCode('os.environ.get("STAGE", "unset")')).text).toBe("'unset'");
    // None is no result, as in IPython.
    expect((await sandbox.runCode('os.environ.get("STAGE")')).results).toEqual([]);
  });

  it('creates, lists, restarts and removes code contexts, each with its own state and cwd', async () => {
    const context = await sandbox.createCodeContext({ cwd: '/tmp' });
    expect(context).toMatchObject({ language: 'python', cwd: '/tmp' });
    expect((await sandbox.runCode('import os\nos.getcwd()', { context })).text).toBe("'/tmp'");
    // Its state is its own: the default context's x is not there.
    expect((await sandbox.runCode('x', { context })).error?.name).toBe('NameError');
    await sandbox.runCode('z = 5', { context });
    expect((await sandbox.runCode('z', { context })).text).toBe('5');
    const listed = await sandbox.listCodeContexts();
    expect(listed).toEqual(expect.arrayContaining([{ id: context.id, language: 'python', cwd: '/tmp' }]));
    await sandbox.restartCodeContext(context);
    // Restarted: the same id and cwd, its state gone.
    expect((await sandbox.runCode('z', { context })).error?.name).toBe('NameError');
    expect((await sandbox.runCode('import os\nos.getcwd()', { context })).text).toBe("'/tmp'");
    await sandbox.removeCodeContext(context.id);
    expect((await sandbox.listCodeContexts()).map((listedContext) => listedContext.id)).not.toContain(
      context.id,
    );
    await expect(sandbox.runCode('1', { context })).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.removeCodeContext(context.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('interrupts a cell its caller gave up on, so the context answers the next one at once', async () => {
    await expect(sandbox.runCode('import time\ntime.sleep(30)', { timeoutMs: 1000 })).rejects.toBeInstanceOf(
      TimeoutError,
    );
    const next = await sandbox.runCode('x + 1', { timeoutMs: 10_000 });
    expect(next.text).toBe('42');
  });

  it('keeps the kernel and its state through a pause and a connect (devhost freezes it, memory and all)', async () => {
    expect(await sandbox.pause()).toBe(true);
    expect((await sandbox.getInfo()).state).toBe('paused');
    const again = await Sandbox.connect(sandbox.sandboxId, { apiKey });
    expect((await again.getInfo()).state).toBe('running');
    expect((await again.runCode('x')).text).toBe('41');
  });

  it("serves LlamaIndex's interpreter tool (@llamaindex/tools 0.2.1) unmodified: files uploaded, the cell's figure saved", async () => {
    const work = await mkdtemp(join(tmpdir(), 'llamaindex-'));
    try {
      const uploadedFilesDir = join(work, 'uploaded');
      const outputDir = join(work, 'output');
      await mkdir(uploadedFilesDir);
      await writeFile(join(uploadedFilesDir, 'data.csv'), 'x,y\n1,2\n3,4\n');
      const before = new Set((await Sandbox.list({ apiKey }).nextItems()).map((info) => info.sandboxId));
      // The tool saves only under a relative folder (its own rule): the temporary one, from here.
      const tool = interpreter({ apiKey, outputDir: relative(process.cwd(), outputDir), uploadedFilesDir });
      const plots = hasMatplotlib() || process.env.CI !== undefined;
      const code = [
        'import csv',
        'rows = list(csv.reader(open("data.csv")))',
        ...(plots ? ['import matplotlib.pyplot as plt', 'plt.plot([1, 2, 3])', 'plt.show()'] : []),
        'len(rows)',
      ].join('\n');
      const answer = (await tool.call({ code })) as {
        isError: boolean;
        text: string;
        extraResult: { type: string; filename?: string }[];
      };
      expect(answer).toMatchObject({ isError: false, text: '3' });
      if (plots) {
        expect(answer.extraResult).toEqual([expect.objectContaining({ type: 'png' })]);
        const [saved] = await readdir(outputDir);
        expect(saved).toBe(answer.extraResult[0]?.filename);
        expect((await readFile(join(outputDir, saved ?? ''))).subarray(1, 4).toString()).toBe('PNG');
      }
      const failed = (await tool.call({ code: 'raise ValueError("no")' })) as { isError: boolean };
      expect(failed.isError).toBe(true);
      // The tool leaves its sandboxes running: end them.
      for (const info of await Sandbox.list({ apiKey }).nextItems())
        if (!before.has(info.sandboxId)) await Sandbox.kill(info.sandboxId, { apiKey });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('refuses a language it has no kernel for, and another sandbox or no token', async () => {
    await expect(sandbox.runCode('1', { language: 'r' })).rejects.toThrow(/400/);
    const other = await Sandbox.create({ apiKey });
    try {
      const post = (headers: Record<string, string>) =>
        fetch(`${e.runtime.url}/e2b/execute`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'e2b-sandbox-id': sandbox.sandboxId,
            'e2b-sandbox-port': '49999',
            ...headers,
          },
          body: JSON.stringify({ code: '1' }),
        });
      expect((await post({})).status).toBe(401);
      // Another sandbox's token reaches nothing of this one's, on the contexts routes either.
      const otherToken = (other as unknown as { envdAccessToken: string }).envdAccessToken;
      expect((await post({ 'x-access-token': otherToken })).status).toBe(401);
      const contexts = await fetch(`${e.runtime.url}/e2b/contexts`, {
        headers: {
          'e2b-sandbox-id': sandbox.sandboxId,
          'e2b-sandbox-port': '49999',
          'e2b-traffic-access-token': otherToken,
        },
      });
      expect(contexts.status).toBe(401);
    } finally {
      await other.kill();
    }
  });
});
