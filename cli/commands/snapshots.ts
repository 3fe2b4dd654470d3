import { type Command, table } from '../context.ts';
import { sandboxColumns, waitBound, waitUntilRunning } from './sandboxes.ts';

export const snapshots: Command = {
  usage: `Usage:
  differently snapshots create <sandbox-id> [--kind disk|memory] [--wait [--timeout SECONDS]]    (creating, then ready or failed)
  differently snapshots list
  differently snapshots get <snapshot-id>
  differently snapshots delete <snapshot-id>`,
  actions: {
    create: async (ctx) => {
      let snapshot = await ctx.client.createSnapshot(
        ctx.need(ctx.rest[0], 'sandbox-id'),
        ctx.values.kind === 'memory' ? 'memory' : 'disk',
      );
      if (ctx.values.wait === true && snapshot.status === 'creating') {
        ctx.note(`${snapshot.id} is being taken; waiting until it is ready...`);
        snapshot = await ctx.client.waitUntilSnapshotReady(snapshot.id, {
          intervalMs: 250,
          ...waitBound(ctx),
          onProgress: (current) =>
            ctx.note(
              `${current.id}: ${current.status}${current.statusMessage === null ? '' : `: ${current.statusMessage}`}`,
            ),
        });
      }
      ctx.print(snapshot, () => table([snapshot], ['id', 'status', 'kind', 'pool', 'sizeBytes']));
      return 0;
    },
    list: async (ctx) => {
      const page = await ctx.client.listSnapshots({ limit: 100 });
      ctx.print(page, () => table(page.items, ['id', 'sandboxId', 'kind', 'pool', 'createdAt']));
      return 0;
    },
    get: async (ctx) => {
      const snapshot = await ctx.client.getSnapshot(ctx.need(ctx.rest[0], 'snapshot-id'));
      ctx.print(snapshot, () =>
        table([snapshot], ['id', 'sandboxId', 'kind', 'pool', 'sizeBytes', 'createdAt']),
      );
      return 0;
    },
    delete: async (ctx) => {
      const result = await ctx.client.deleteSnapshot(ctx.need(ctx.rest[0], 'snapshot-id'));
      ctx.print(result, () => `${result.id} deleted${result.note === undefined ? '' : ` (${result.note})`}`);
      return 0;
    },
  },
};

export const fork: Command = {
  usage: 'Usage: differently fork <id> [--wait]',
  argumentFirst: true,
  actions: {
    '': async (ctx, id) => {
      let child = await ctx.client.fork(ctx.need(id || undefined, 'id'));
      if (ctx.values.wait === true) child = await waitUntilRunning(ctx, child.id);
      ctx.print(child, () => table([child], sandboxColumns));
      return 0;
    },
  },
};
