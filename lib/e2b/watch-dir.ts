import type { StreamWrite } from '../sandboxes/exec-stream.ts';
import { maxStreamSeconds } from '../sandboxes/exec-stream.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import * as z from '../zod.ts';
import { ConnectError, endStream, envelope } from './connect-protocol.ts';
import { e2bHome } from './envd.ts';

/**
 * envd's filesystem.WatchDir through the streamed exec every pool has: a POSIX sh watcher in the sandbox
 * compares the folder's listing (paths and inodes) every 0.2 s and finds what was written since the last
 * look (`find -newer`), printing one line an event; here each line is envd's event. So it works on every
 * backend with a streamed exec, needs no inotify in the sandbox, and ends with the call (its deadline or
 * its caller leaving). A rename is a path gone whose inode reappears under a new one: `rename` for the old
 * name and `create` for the new, as inotify reports it. What changes and changes back between two looks
 * is not seen.
 */
const watcherScript = `
dir=$1; recursive=$2
# E2B's home is there in every E2B sandbox: made here if nothing made it yet.
[ "$3" = home ] && [ ! -d "$dir" ] && mkdir -p "$dir" 2>/dev/null
[ -d "$dir" ] || { echo "E"; exit 66; }
# A watcher killed outright (its call's end) leaves its state behind: a live one touches it every 0.2 s.
find /tmp/. ! -name . -prune -name '.e2b-watch.*' -mmin +1 -exec rm -rf {} + 2>/dev/null
state=$(mktemp -d /tmp/.e2b-watch.XXXXXX) || exit 70
trap 'rm -rf "$state"' EXIT
trap 'exit 0' INT TERM HUP
list() {
  if [ "$recursive" = 1 ]; then find "$dir" ! -path "$dir" -exec ls -di {} + 2>/dev/null
  else find "$dir/." ! -name . -prune -exec ls -di {} + 2>/dev/null; fi
}
written() {
  if [ "$recursive" = 1 ]; then find "$dir" ! -type d -newer "$state/mark" -print 2>/dev/null
  else find "$dir/." ! -name . -prune ! -type d -newer "$state/mark" -print 2>/dev/null; fi
}
touch "$state/mark"; : > "$state/written"; list > "$state/old"
echo S
while :; do
  sleep 0.2
  touch "$state/next"
  list > "$state/new"
  written > "$state/written"
  mv "$state/next" "$state/mark"
  awk -v dir="$dir" '
    function rel(p) {
      if (substr(p, 1, length(dir) + 1) == dir "/") p = substr(p, length(dir) + 2)
      if (substr(p, 1, 2) == "./") p = substr(p, 3)
      return p
    }
    function entry(line) { sub(/^ *[0-9]+ /, "", line); return line }
    FILENAME == ARGV[1] { p = entry($0); was[p] = $1; next }
    FILENAME == ARGV[2] { p = entry($0); now[p] = $1; at[$1] = p; next }
    { wrote[$0] = 1 }
    END {
      for (p in was) if (!(p in now)) {
        if ((was[p] in at) && !(at[was[p]] in was)) print "R\t" rel(p); else print "D\t" rel(p)
      }
      for (p in now) if (!(p in was)) print "C\t" rel(p)
      for (p in wrote) print "W\t" rel(p)
    }' "$state/old" "$state/new" "$state/written"
  mv "$state/new" "$state/old"
done
`;

const eventTypes: Record<string, string> = {
  C: 'EVENT_TYPE_CREATE',
  W: 'EVENT_TYPE_WRITE',
  D: 'EVENT_TYPE_REMOVE',
  R: 'EVENT_TYPE_RENAME',
};

export const watchDirSchema = z.looseObject({
  path: z.string().check(z.minLength(1), z.maxLength(4096)),
  recursive: z.optional(z.boolean()),
});

/** The watch as Connect messages: start once the first listing is taken, then each event; keep-alives. */
export async function watchDir(
  sandboxes: SandboxService,
  principal: OrgPrincipal,
  id: string,
  request: { path: string; recursive: boolean },
  deadlineMs: number | undefined,
  cancelled: AbortSignal | undefined,
): Promise<(write: StreamWrite) => Promise<void>> {
  const timeoutSeconds = Math.min(
    maxStreamSeconds,
    deadlineMs === undefined || deadlineMs <= 0
      ? maxStreamSeconds
      : Math.max(1, Math.ceil(deadlineMs / 1000)),
  );
  const produce = await sandboxes.execStream(
    principal,
    id,
    {
      args: [
        '/bin/sh',
        '-c',
        watcherScript,
        'watch',
        request.path,
        request.recursive ? '1' : '0',
        request.path === e2bHome ? 'home' : '',
      ],
      timeoutSeconds,
    },
    cancelled,
  );
  return async (write) => {
    let pending = '';
    let started = false;
    let failure: ConnectError | undefined;
    let last = Date.now();
    const send = async (message: unknown) => {
      last = Date.now();
      await write(envelope(message));
    };
    const keepAlive = setInterval(() => {
      if (started && Date.now() - last >= 50_000) void send({ keepalive: {} });
    }, 10_000);
    try {
      await produce(async (line) => {
        if ('error' in line) failure = new ConnectError('unavailable', line.error.message);
        if (!('stream' in line) || line.stream !== 'stdout') return;
        pending += line.data;
        for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
          const text = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (text === 'S') {
            started = true;
            await send({ start: {} });
          } else if (text === 'E') {
            failure = new ConnectError('not_found', `${request.path} is not a directory in the sandbox`);
          } else {
            const type = eventTypes[text.charAt(0)];
            if (type !== undefined && text.charAt(1) === '\t')
              await send({ filesystem: { name: text.slice(2), type } });
          }
        }
      });
    } finally {
      clearInterval(keepAlive);
    }
    if (failure === undefined && !started)
      failure = new ConnectError('internal', 'the watcher ended before it started');
    await write(
      failure === undefined ? endStream() : endStream({ code: failure.code, message: failure.message }),
    );
  };
}
