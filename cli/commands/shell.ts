import type { AttachStreamLine } from '../../sdk/index.ts';
import { type CommandContext, UsageError } from '../context.ts';

/** Input a single request carries at most (the API's bound). */
const maxChunk = 64 * 1024;

/** The login shell a sandbox has: bash where it is there, sh otherwise. */
const defaultShell = [
  '/bin/sh',
  '-c',
  'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi',
];

/**
 * `differently sandboxes shell <id> [-- command...]`: a terminal in the sandbox. On a terminal the process
 * gets a pty of this terminal's size, the keyboard goes to it raw (Ctrl-C included) and a resize (SIGWINCH)
 * follows; piped, its stdin is the pipe and ends with it. Exits with the process's exit code. The attach
 * is taken again when its stream reaches its time limit, so a session can outlast it.
 */
export async function shell(ctx: CommandContext): Promise<number> {
  const id = ctx.need(ctx.rest[0], 'id');
  const terminal = ctx.io.terminal;
  if (terminal === undefined) throw new UsageError('sandboxes shell needs standard input and output');
  const { stdin, stdout } = terminal;
  const tty = stdin.isTTY === true && stdout.isTTY === true;
  const size = () => ({ cols: stdout.columns || 80, rows: stdout.rows || 24 });
  const started = await ctx.client.startProcess(id, {
    args: ctx.command.length > 0 ? ctx.command : defaultShell,
    ...(tty && { pty: size() }),
  });
  const { pid } = started;

  // Input in order, one request at a time; a failure is said once and ends the input.
  let sending: Promise<void> = Promise.resolve();
  let inputFailed = false;
  const send = (work: () => Promise<void>) => {
    sending = sending.then(work).catch((error: unknown) => {
      if (!inputFailed) ctx.io.stderr.write(`\r\ninput not delivered: ${(error as Error).message}\r\n`);
      inputFailed = true;
    });
  };
  const onData = (chunk: Buffer) => {
    for (let at = 0; at < chunk.length; at += maxChunk) {
      const part = chunk.subarray(at, at + maxChunk);
      send(() => ctx.client.writeStdin(id, pid, part));
    }
  };
  const onEnd = () => send(() => ctx.client.closeStdin(id, pid));
  const onResize = () => send(() => ctx.client.resizeProcess(id, pid, size()));
  if (tty) stdin.setRawMode?.(true);
  stdin.on('data', onData);
  stdin.on('end', onEnd);
  if (tty) process.on('SIGWINCH', onResize);
  stdin.resume();
  try {
    for (;;) {
      let final: AttachStreamLine | undefined;
      for await (const line of ctx.client.attachProcess(id, pid)) {
        if ('stream' in line) (line.stream === 'stdout' ? stdout : ctx.io.stderr).write(line.data);
        else if (!('process' in line)) final = line;
      }
      if (final !== undefined && 'exitCode' in final) return final.exitCode;
      if (final !== undefined && 'error' in final) {
        ctx.io.stderr.write(`error: ${final.error.code}: ${final.error.message}\n`);
        return 1;
      }
      // detached: the stream's time is up and the process runs on; attach again.
    }
  } finally {
    if (tty) {
      process.off('SIGWINCH', onResize);
      stdin.setRawMode?.(false);
    }
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    stdin.pause();
  }
}
