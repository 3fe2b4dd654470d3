import { resolve as resolvePath } from 'node:path';
import * as z from 'zod';

/**
 * A devhost pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const devhostConfigSchema = z.strictObject({
  /**
   * Directory holding one sub-directory per sandbox: by default beside the checkout that runs it
   * (`.differently/devhost`), so two installations on one machine never share one.
   */
  root: z.string().min(1).default(resolvePath('.differently', 'devhost')),
  /** Cap on each of stdout and stderr kept by a synchronous exec. */
  outputMaxBytes: z
    .int()
    .min(1024)
    .default(1024 * 1024),
  /**
   * `bubblewrap`: each command in its own mount and PID namespaces, the sandbox's folder as its `/`
   * (adapters/devhost/jail.ts); `none`: host processes in the sandbox's folder; `auto` (default):
   * bubblewrap where it works, otherwise none, said in the pool's limitations and at start.
   */
  isolation: z.enum(['auto', 'bubblewrap', 'none']).default('auto'),
});
export type DevhostConfig = z.infer<typeof devhostConfigSchema>;
