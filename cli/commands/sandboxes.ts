import type { SandboxView } from '../../sdk/index.ts';
import { type Command, type CommandContext, table } from '../context.ts';

export const sandboxColumns = ['id', 'status', 'pool', 'statusMessage'];

/** Waits until a queued sandbox runs, showing progress on a terminal. */
export async function waitUntilRunning(ctx: CommandContext, id: string): Promise<SandboxView> {
  const tty = ctx.io.stderr.isTTY === true;
  const progress = tty ? (s: string) => ctx.io.stderr.write(`\r${s}`) : () => undefined;
  progress(`waiting for ${id} to run...`);
  const sandbox = await ctx.client.waitUntilRunning(id, { intervalMs: 250 });
  progress(`${' '.repeat(60)}\r`);
  return sandbox;
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
    moved = await ctx.client.waitUntilSettled(id, { intervalMs: 250 });
  }
  ctx.print(moved, () => `${moved.id} ${moved.status}`);
  return 0;
};

export const sandboxes: Command = {
  usage: `Usage:
  differently sandboxes create [--pool P]... [--template T] [--ttl SECONDS] [--env K=V]... [--label K=V]... [--wait]
  differently sandboxes list [--status S]
  differently sandboxes get <id>
  differently sandboxes update <id> [--ttl SECONDS] [--label K=V]...
  differently sandboxes stop|start|pause|resume <id> [--wait]
  differently sandboxes delete <id>
A stop, start, pause or resume the backend needs longer for answers with the sandbox stopping, starting,
pausing or resuming (the operations worker finishes it); --wait waits until it has settled.`,
  actions: {
    create: async (ctx) => {
      const { values } = ctx;
      let sandbox = await ctx.client.createSandbox({
        ...(values.pool !== undefined && { placement: { allowedPools: values.pool } }),
        ...(values.template !== undefined && { template: values.template }),
        ...(values.ttl !== undefined && { ttlSeconds: Number(values.ttl) }),
        ...(values.env !== undefined && { env: ctx.pairs(values.env, 'env') }),
        ...(values.label !== undefined && { labels: ctx.pairs(values.label, 'label') }),
      });
      if (values.wait === true) sandbox = await waitUntilRunning(ctx, sandbox.id);
      ctx.print(sandbox, () => table([sandbox], sandboxColumns));
      return 0;
    },
    list: async (ctx) => {
      const page = await ctx.client.listSandboxes({
        ...(ctx.values.status !== undefined && { status: ctx.values.status }),
        limit: 100,
      });
      ctx.print(page, () => table(page.items, sandboxColumns));
      return 0;
    },
    get: async (ctx) => {
      const sandbox = await ctx.client.getSandbox(ctx.need(ctx.rest[0], 'id'));
      ctx.print(sandbox, () => table([sandbox], [...sandboxColumns, 'expiresAt']));
      return 0;
    },
    update: async (ctx) => {
      const { values } = ctx;
      const updated = await ctx.client.updateSandbox(ctx.need(ctx.rest[0], 'id'), {
        ...(values.ttl !== undefined && { ttlSeconds: Number(values.ttl) }),
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
