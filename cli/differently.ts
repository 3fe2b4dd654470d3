#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { DifferentlyError, DifferentlyNetworkError } from '../sdk/index.ts';
import { admin } from './commands/admin.ts';
import { exec } from './commands/exec.ts';
import { files } from './commands/files.ts';
import { mcp } from './commands/mcp.ts';
import { audit, ports, templates, trust, usage } from './commands/org.ts';
import { preflight } from './commands/preflight.ts';
import { sandboxes } from './commands/sandboxes.ts';
import { fork, snapshots } from './commands/snapshots.ts';
import { type CliIo, type Command, CommandContext, UsageError } from './context.ts';
import { cliOptions } from './options.ts';

const overview = `differently: the Differently CLI

Usage: differently <command> [options]

Commands:
  sandboxes create|list|get|delete   manage sandboxes
  sandboxes shell <id>               a terminal in the sandbox; exits with the shell's exit code
  exec <id> -- <command...>          run a command, streaming its output; exits with its exit code
  files ls|get|put                   list, read and write files
  snapshots create|list|delete       snapshots
  fork <id>                          fork a sandbox
  ports <id> <port>                  expose a port
  usage | templates | trust          the org's quota and usage; templates; the trust report
  admin orgs|projects|keys|pools|policy|reconcile
                                     tenancy, pools, placement policy, operations (admin key)
  audit list|verify                  the org's audit events; recompute the chains (admin key)
  preflight --config FILE            validate a config and check every credential reference
  mcp                                the MCP tools over stdio, for a local agent

Options everywhere: --endpoint URL (or DIFFERENTLY_ENDPOINT), --key KEY (or DIFFERENTLY_API_KEY),
--json for machine output, --help. Every command has its own --help.`;

/** The command table: a new command is one entry here and its file under cli/commands/. */
const commands: Record<string, Command> = {
  sandboxes,
  exec,
  files,
  snapshots,
  fork,
  ports,
  usage,
  templates,
  trust,
  admin,
  audit,
  preflight,
  mcp,
};

/**
 * The help for `differently <group> <action> --help`: the group's usage lines for that action (with their
 * continuation lines); the whole group's usage when the action names none of them.
 */
function usageOf(command: Command, group: string, action: string | undefined): string {
  if (action === undefined || command.argumentFirst === true) return command.usage;
  const lines = command.usage.split('\n');
  const picked: string[] = [];
  let taking = false;
  for (const line of lines) {
    const usageLine = /^\s*(Usage: )?differently /.test(line);
    if (usageLine) taking = new RegExp(`differently ${group} (\\S*\\|)?${action}(\\||\\s|$)`).test(line);
    else if (!/^\s{6,}/.test(line)) taking = false;
    if (taking) picked.push(line.replace(/^\s+/, (space) => (space.length >= 6 ? space : '  ')));
  }
  return picked.length === 0 ? command.usage : `Usage:\n${picked.join('\n')}`;
}

/** Parses the arguments and runs the command; the exit code. Errors are the caller's to print (`run`). */
async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const dash = argv.indexOf('--');
  const { values, positionals } = parseArgs({
    args: dash >= 0 ? argv.slice(0, dash) : argv,
    options: cliOptions,
    allowPositionals: true,
    strict: true,
  });
  const [group = '', word, ...rest] = positionals;
  const command = Object.hasOwn(commands, group) ? commands[group] : undefined;
  if (values.help === true || command === undefined) {
    if (values.help !== true && group !== '') {
      io.stderr.write(`differently: unknown command ${JSON.stringify(group)}\n\n${overview}\n`);
      return 2;
    }
    io.stdout.write(`${command === undefined ? overview : usageOf(command, group, word)}\n`);
    return 0;
  }
  const action = command.argumentFirst === true ? '' : (word ?? '');
  const handler = Object.hasOwn(command.actions, action) ? command.actions[action] : undefined;
  if (handler === undefined)
    throw new UsageError(
      `${action === '' ? `differently ${group} needs an action` : `differently ${group}: unknown action ${JSON.stringify(action)}`}\n${command.usage}`,
    );
  const context = new CommandContext(io, values, rest, dash >= 0 ? argv.slice(dash + 1) : [], command.usage);
  return handler(context, command.argumentFirst === true ? (word ?? '') : action);
}

function isParseArgsError(error: unknown): error is TypeError & { code: string } {
  return (
    error instanceof TypeError &&
    String((error as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS')
  );
}

/**
 * The CLI as a function: runs `argv` (without `node` and the script) against `io` and resolves with the
 * exit code, every error printed as the user sees it (usage errors exit 2). Tests call it in process.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof DifferentlyError)
      io.stderr.write(`error: ${error.code}: ${error.message.replace(`${error.code}: `, '')}\n`);
    else if (error instanceof DifferentlyNetworkError) io.stderr.write(`error: ${error.message}\n`);
    else if (error instanceof UsageError) io.stderr.write(`${error.message}\n`);
    else if (isParseArgsError(error)) {
      // node's own wording names positionals and `--`; say what is wrong and where the options are.
      const option = /'(-[^']*)'/.exec(error.message)?.[1];
      io.stderr.write(
        `${option !== undefined && error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? `differently: unknown option ${option}` : `differently: ${error.message}`} (differently <command> --help lists the options)\n`,
      );
      return 2;
    } else io.stderr.write(`error: ${(error as Error).message}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
}

if (import.meta.main) {
  run(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    terminal: { stdin: process.stdin, stdout: process.stdout },
  }).then((code) => process.exit(code));
}
