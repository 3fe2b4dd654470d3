import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import * as z from '../../lib/zod.ts';

/**
 * `.differently/devhost` beside the checkout; but a root control plane runs its jails as the sandbox
 * user, which must be able to reach the folder, so where the checkout is closed to other users (under
 * /root, say) the folder is one of the temporary folder's instead, named after the checkout so two
 * installations still never share one.
 */
export function defaultDevhostRoot(): string {
  const beside = resolvePath('.differently', 'devhost');
  if (process.getuid?.() !== 0 || reachableByOthers(process.cwd())) return beside;
  const checkout = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 12);
  return join(tmpdir(), `differently-devhost-${checkout}`);
}

/** Whether every folder from `/` down to `dir` lets other users through (o+x). */
export function reachableByOthers(dir: string): boolean {
  let current = resolvePath(dir);
  for (;;) {
    try {
      if ((statSync(current).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/**
 * A devhost pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const devhostConfigSchema = z.lazy(() =>
  z.strictObject({
    /**
     * Directory holding one sub-directory per sandbox: by default beside the checkout that runs it
     * (`.differently/devhost`), so two installations on one machine never share one.
     */
    root: z._default(z.string().check(z.minLength(1)), defaultDevhostRoot),
    /** Cap on each of stdout and stderr kept by a synchronous exec. */
    outputMaxBytes: z._default(z.int().check(z.gte(1024)), 1024 * 1024),
    /**
     * `bubblewrap`: each command in its own mount and PID namespaces, the sandbox's folder as its `/`
     * (adapters/devhost/jail.ts); `none`: host processes in the sandbox's folder; `auto` (default):
     * bubblewrap where it works, otherwise none, said in the pool's limitations and at start.
     */
    isolation: z._default(z.enum(['auto', 'bubblewrap', 'none']), 'auto'),
    /**
     * The host user every jailed process runs as when the control plane runs as root (nobody by default):
     * bwrap is started as this user, so nothing in the jail holds root's uid or a capability on the host.
     * The pool's root must be reachable by it (the adapter makes the root itself 0711; its parents are
     * checked at start). Ignored when the control plane is not root: it cannot hand out another uid.
     */
    runAsUid: z._default(z.int().check(z.gte(1), z.lte(4_294_967_294)), 65534),
    runAsGid: z._default(z.int().check(z.gte(1), z.lte(4_294_967_294)), 65534),
  }),
);
export type DevhostConfig = z.infer<typeof devhostConfigSchema>;
