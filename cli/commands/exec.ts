import { type Command, UsageError } from '../context.ts';

export const exec: Command = {
  usage: `Usage: differently exec <id> [--cwd DIR] [--timeout SECONDS] -- <command> [args...]
Streams stdout and stderr as produced and exits with the command's exit code.`,
  argumentFirst: true,
  actions: {
    '': async (ctx, id) => {
      if (ctx.command.length === 0) throw new UsageError(exec.usage);
      const { values, io } = ctx;
      let exitCode = 1;
      for await (const event of ctx.client.execStream(ctx.need(id || undefined, 'id'), {
        args: ctx.command,
        ...(values.cwd !== undefined && { cwd: values.cwd }),
        ...(values.timeout !== undefined && {
          timeoutSeconds: ctx.wholeNumber(values.timeout, 'timeout', 1),
        }),
      })) {
        if (values.json === true) io.stdout.write(`${JSON.stringify(event)}\n`);
        else if ('stream' in event) (event.stream === 'stdout' ? io.stdout : io.stderr).write(event.data);
        if ('exitCode' in event) exitCode = event.exitCode;
        if ('error' in event) {
          io.stderr.write(`error: ${event.error.code}: ${event.error.message}\n`);
          exitCode = 1;
        }
      }
      return exitCode;
    },
  },
};
