import { egressModes } from '../../lib/network/policy.ts';
import type { SandboxView } from '../../sdk/index.ts';
import { type Command, type CommandContext, table, UsageError } from '../context.ts';
import { shell } from './shell.ts';

export const sandboxColumns = ['id', 'status', 'pool', 'statusMessage'];

/** `--timeout SECONDS` as a wait's bound (default: the SDK's). */
export function waitBound(ctx: CommandContext): { timeoutMs?: number } {
  if (ctx.values.timeout === undefined) return {};
  const seconds = Number(ctx.values.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError('--timeout takes a number of seconds');
  return { timeoutMs: seconds * 1000 };
}

/** One stderr line per change a wait sees: the status, and why it waits when it does. */
export function progressLine(sandbox: SandboxView): string {
  const why = sandbox.waitingFor === null ? '' : ` (waiting for ${sandbox.waitingFor})`;
  return `${sandbox.id}: ${sandbox.status}${why}${sandbox.statusMessage === null ? '' : `: ${sandbox.statusMessage}`}`;
}

/**
 * Waits until a queued sandbox runs. Its id is on stderr first (a Ctrl-C during the wait keeps it), then
 * each status change with its reason, on a terminal or not.
 */
export async function waitUntilRunning(ctx: CommandContext, id: string): Promise<SandboxView> {
  ctx.note(`${id}: created; waiting for it to run (Ctrl-C stops waiting, not the sandbox)`);
  return ctx.client.waitUntilRunning(id, {
    intervalMs: 250,
    ...waitBound(ctx),
    onProgress: (sandbox) => ctx.note(progressLine(sandbox)),
  });
}

/** `--cpu`, `--memory` (MiB) and `--disk` (GiB) as the request's resources. */
function resourcesOf(ctx: CommandContext): Record<string, number> | undefined {
  const resources: Record<string, number> = {};
  for (const [flag, field] of [
    ['cpu', 'cpu'],
    ['memory', 'memoryMiB'],
    ['disk', 'diskGiB'],
  ] as const) {
    const value = ctx.values[flag];
    if (value === undefined) continue;
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new UsageError(`--${flag} takes a positive number`);
    resources[field] = number;
  }
  return Object.keys(resources).length === 0 ? undefined : resources;
}

const lifecycle = async (ctx: CommandContext, action: string): Promise<number> => {
  const id = ctx.need(ctx.rest[0], 'id');
  const calls = {
    stop: () => ctx.client.stop(id, { wait: false }),
    start: () => ctx.client.start(id, { wait: false }),
    pause: () => ctx.client.pause(id, { wait: false }),
    resume: () => ctx.client.resume(id, { wait: false }),
  } as const;
  let moved = await calls[action as keyof typeof calls]();
  if (ctx.values.wait === true && moved.status !== 'running' && moved.status.endsWith('ing')) {
    ctx.note(`${moved.id} is ${moved.status}; waiting for it to settle...`);
    moved = await ctx.client.waitUntilSettled(id, {
      intervalMs: 250,
      ...waitBound(ctx),
      onProgress: (sandbox) => ctx.note(progressLine(sandbox)),
    });
  }
  ctx.print(moved, () => `${moved.id} ${moved.status}`);
  return 0;
};

/** --egress and --allow as a network policy (a create's, an org's default); the API checks each destination. */
export function networkOf(egress: string | undefined, allow: string[] | undefined) {
  if (egress === undefined) {
    if (allow !== undefined) throw new UsageError('--allow needs --egress allowlist');
    return {};
  }
  const mode = egressModes.find((known) => known === egress);
  if (mode === undefined) throw new UsageError(`--egress takes ${egressModes.join(', ')}, not ${egress}`);
  return { network: { egress: mode, ...(allow !== undefined && { allow }) } };
}

export const sandboxes: Command = {
  usage: `Usage:
  differently sandboxes create [--pool P]... [--template T] [--profile P] [--cpu N] [--memory MIB] [--disk GIB]
                              [--project ID] [--from-snapshot ID] [--ttl SECONDS] [--env K=V]... [--label K=V]...
                              [--egress allow|deny|allowlist [--allow DEST]...]
                              [--wait [--timeout SECONDS]]
  differently sandboxes list [--status S] [--label K=V]... [--project ID]
  differently sandboxes get <id>
  differently sandboxes update <id> [--ttl SECONDS] [--label K=V]...
  differently sandboxes stop|start|pause|resume <id> [--wait [--timeout SECONDS]]
  differently sandboxes delete <id>
  differently sandboxes shell <id> [-- command [args...]]
A stop, start, pause or resume the backend needs longer for answers with the sandbox stopping, starting,
pausing or resuming (the operations worker finishes it); --wait waits until it has settled.
--wait prints the id at once and each status change (and why it waits) on stderr; the record on stdout.
shell opens a terminal in the sandbox (its login shell, or the command after --), resized with this one;
piped, the pipe is its stdin. It exits with the shell's exit code.`,
  actions: {
    create: async (ctx) => {
      const { values } = ctx;
      const resources = resourcesOf(ctx);
      let sandbox = await ctx.client.createSandbox({
        ...(values.pool !== undefined && { placement: { allowedPools: values.pool } }),
        ...(values.template !== undefined && { template: values.template }),
        ...(values.profile !== undefined && { profile: values.profile }),
        ...(resources !== undefined && { resources }),
        ...(values.project !== undefined && { projectId: values.project }),
        ...(values['from-snapshot'] !== undefined && { fromSnapshot: values['from-snapshot'] }),
        ...(values.ttl !== undefined && { ttlSeconds: ctx.wholeNumber(values.ttl, 'ttl', 1) }),
        ...(values.env !== undefined && { env: ctx.pairs(values.env, 'env') }),
        ...(values.label !== undefined && { labels: ctx.pairs(values.label, 'label') }),
        // The API checks the policy and names what is wrong with it (docs/network.md).
        ...networkOf(values.egress, values.allow),
      });
      if (values.wait === true) sandbox = await waitUntilRunning(ctx, sandbox.id);
      ctx.print(sandbox, () => table([sandbox], sandboxColumns));
      return 0;
    },
    list: async (ctx) => {
      const labels = ctx.pairs(ctx.values.label, 'label');
      const page = await ctx.client.listSandboxes({
        ...(ctx.values.status !== undefined && { status: ctx.values.status }),
        ...(ctx.values.project !== undefined && { projectId: ctx.values.project }),
        ...(Object.keys(labels).length > 0 && {
          label: Object.entries(labels)
            .map(([key, value]) => `${key}=${value}`)
            .join(','),
        }),
        limit: 100,
      });
      ctx.print(page, () => table(page.items, sandboxColumns));
      return 0;
    },
    shell,
    get: async (ctx) => {
      const sandbox = await ctx.client.getSandbox(ctx.need(ctx.rest[0], 'id'));
      ctx.print(sandbox, () => table([sandbox], [...sandboxColumns, 'expiresAt']));
      return 0;
    },
    update: async (ctx) => {
      const { values } = ctx;
      const updated = await ctx.client.updateSandbox(ctx.need(ctx.rest[0], 'id'), {
        ...(values.ttl !== undefined && { ttlSeconds: ctx.wholeNumber(values.ttl, 'ttl', 1) }),
        ...(values.label !== undefined && { labels: ctx.pairs(values.label, 'label') }),
      });
      ctx.print(updated, () =>
        [table([updated], [...sandboxColumns, 'expiresAt']), updated.providerTtl?.note]
          .filter(Boolean)
          .join('\n'),
      );
      return 0;
    },
    stop: lifecycle,
    start: lifecycle,
    pause: lifecycle,
    resume: lifecycle,
    delete: async (ctx) => {
      const sandbox = await ctx.client.deleteSandbox(ctx.need(ctx.rest[0], 'id'));
      ctx.print(sandbox, () => `${sandbox.id} ${sandbox.status}`);
      return 0;
    },
  },
};
