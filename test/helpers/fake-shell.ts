import type { FakeExecFunc } from '../../adapters/fake/fake-adapter.ts';

/**
 * Just enough of /bin/sh for the fake adapter to answer the conformance suite's commands: `;`-separated
 * `exit N`, `true`, `pwd`, `cat` (stdin), `sleep N` (a timeout shorter than N is reported, not waited
 * for) and `echo` with "$VAR" expansion and `>&2`. Env is the exec's (the fake merges the sandbox's in).
 */
export function fakeShell(): FakeExecFunc {
  return (request) => {
    const env = request.env ?? {};
    let stdout = '';
    let stderr = '';
    const finish = (exitCode: number, timedOut = false) => ({
      exitCode,
      stdout,
      stderr,
      durationMs: 0,
      truncated: false,
      timedOut,
    });
    const script = request.command ?? request.args?.join(' ') ?? '';
    for (const raw of script.split(';')) {
      const statement = raw.trim();
      const toStderr = statement.endsWith('>&2');
      const words = (toStderr ? statement.slice(0, -3) : statement).trim();
      const [verb = '', ...rest] = words.split(/\s+/);
      const text = rest.join(' ');
      const write = (out: string) => {
        if (toStderr) stderr += out;
        else stdout += out;
      };
      if (verb === 'exit') return finish(Number(text));
      if (verb === 'true' || verb === '') continue;
      if (verb === 'pwd') write(`${request.cwd ?? '/'}\n`);
      else if (verb === 'cat') write(request.stdin ?? '');
      else if (verb === 'sleep') {
        if (request.timeoutSeconds !== undefined && Number(text) > request.timeoutSeconds)
          return finish(124, true);
      } else if (verb === 'echo') {
        const unquoted = text.replace(/^"(.*)"$/, '$1');
        write(`${unquoted.replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => env[name] ?? '')}\n`);
      } else return finish(127);
    }
    return finish(0);
  };
}
