/**
 * The wrappers every command the E2B facade runs as a streamed exec goes under, so List and SendSignal
 * work from any container and on every pool with exec and files (docs/e2b.md "How commands are found
 * again"). POSIX sh, or E2B's own login shell.
 */

/**
 * Where a started command is known inside its sandbox, so List and SendSignal work from any container
 * and on every pool with exec and files: `procs/<pid>` (its config, touched every second while it runs)
 * and `signals/<pid>` (a signal asked for, which the command's own watcher delivers).
 */
export const processDir = '/tmp/.e2b';

/**
 * Runs "$@" (the command), records it under processDir while it runs, and delivers a signal asked for
 * there to the exec's whole process group (the wrapper, the command and all it started: the exec makes
 * the wrapper its group's leader, so the backend's own timeout and delete still end everything), or to
 * the command alone where the wrapper leads no group. POSIX sh only.
 *
 * Every program it starts costs a command its time (a few ms each), so the wrapper starts only the
 * watcher and its sleep: the folders are made only when missing, and an ended command's entry is emptied
 * with a redirection rather than removed (List skips empty entries; a watcher of a command that runs a
 * second or more removes them, then every 10 s).
 */
const processWrapper = [
  'id=$1; config=$2; shift 2',
  `dir=${processDir}`,
  '[ -d "$dir/signals" ] || mkdir -p "$dir/procs" "$dir/signals" 2>/dev/null',
  'printf %s "$config" > "$dir/procs/$id" 2>/dev/null',
  '"$@" &',
  'child=$!',
  '( n=0; while kill -0 "$$" 2>/dev/null; do sleep 0.1;',
  '    if [ -e "$dir/signals/$id" ]; then sig=$(cat "$dir/signals/$id"); rm -f "$dir/signals/$id"; : > "$dir/procs/$id";',
  '      kill -s "$sig" -- "-$$" 2>/dev/null || kill -s "$sig" "$child" 2>/dev/null; fi;',
  '    n=$((n + 1)); [ $((n % 10)) -eq 0 ] && touch "$dir/procs/$id" 2>/dev/null;',
  '    [ $((n % 100)) -eq 10 ] && find "$dir/procs" -type f -size 0 -exec rm -f {} + 2>/dev/null;',
  '  done ) </dev/null >/dev/null 2>&1 &',
  'watcher=$!',
  'wait "$child"; code=$?',
  'kill "$watcher" 2>/dev/null',
  ': > "$dir/procs/$id" 2>/dev/null',
  '[ -e "$dir/signals/$id" ] && rm -f "$dir/signals/$id"',
  'exit "$code"',
].join('\n');

/**
 * The same as processWrapper inside the login shell E2B's SDKs ask for (`/bin/bash -l -c <command>`),
 * saving the separate `sh` a command would otherwise start first: the shell records itself, starts the
 * watcher, and runs the command with `eval` (positional parameters cleared, as `bash -c` has none); its
 * EXIT trap stops the watcher and empties the entry. The watcher ends with the shell in any case.
 */
const loginShellPrelude = [
  `__e2b_id=$1; __e2b_dir=${processDir}; __e2b_command=$3`,
  '[ -d "$__e2b_dir/signals" ] || mkdir -p "$__e2b_dir/procs" "$__e2b_dir/signals" 2>/dev/null',
  'printf %s "$2" > "$__e2b_dir/procs/$__e2b_id" 2>/dev/null',
  '( n=0; while kill -0 "$$" 2>/dev/null; do sleep 0.1;',
  '    if [ -e "$__e2b_dir/signals/$__e2b_id" ]; then sig=$(cat "$__e2b_dir/signals/$__e2b_id");',
  '      rm -f "$__e2b_dir/signals/$__e2b_id"; : > "$__e2b_dir/procs/$__e2b_id";',
  '      kill -s "$sig" -- "-$$" 2>/dev/null || kill -s "$sig" "$$" 2>/dev/null; fi;',
  '    n=$((n + 1)); [ $((n % 10)) -eq 0 ] && touch "$__e2b_dir/procs/$__e2b_id" 2>/dev/null;',
  '    [ $((n % 100)) -eq 10 ] && find "$__e2b_dir/procs" -type f -size 0 -exec rm -f {} + 2>/dev/null;',
  '  done ) </dev/null >/dev/null 2>&1 &',
  '__e2b_watcher=$!',
  'trap \'kill "$__e2b_watcher" 2>/dev/null; : > "$__e2b_dir/procs/$__e2b_id" 2>/dev/null\' EXIT',
  'shift 3',
  'eval "$__e2b_command"',
].join('\n');

/** The command under its wrapper: E2B's login shell takes the prelude itself, anything else runs under sh. */
export function wrappedCommand(cmd: string, args: readonly string[], pid: string, config: string): string[] {
  if (cmd === '/bin/bash' && args.length === 3 && args[0] === '-l' && args[1] === '-c')
    return ['/bin/bash', '-l', '-c', loginShellPrelude, '/bin/bash', pid, config, args[2] ?? ''];
  return ['/bin/sh', '-c', processWrapper, 'e2b', pid, config, cmd, ...args];
}
