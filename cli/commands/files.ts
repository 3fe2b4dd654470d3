import { readFile, writeFile } from 'node:fs/promises';
import { type Command, table } from '../context.ts';

export const files: Command = {
  usage: `Usage:
  differently files ls <id> <path>
  differently files get <id> <path> [--out FILE]
  differently files put <id> <path> <local-file>`,
  actions: {
    ls: async (ctx) => {
      const listing = await ctx.client.listFiles(ctx.need(ctx.rest[0], 'id'), ctx.need(ctx.rest[1], 'path'));
      ctx.print(listing, () => table(listing.items, ['name', 'isDir', 'size']));
      return 0;
    },
    get: async (ctx) => {
      const content = await ctx.client.readFile(ctx.need(ctx.rest[0], 'id'), ctx.need(ctx.rest[1], 'path'));
      if (ctx.values.out !== undefined) await writeFile(ctx.values.out, content);
      else ctx.io.stdout.write(content);
      return 0;
    },
    put: async (ctx) => {
      await ctx.client.writeFile(
        ctx.need(ctx.rest[0], 'id'),
        ctx.need(ctx.rest[1], 'path'),
        await readFile(ctx.need(ctx.rest[2], 'local-file')),
      );
      ctx.print({ written: true }, () => `wrote ${ctx.rest[1]}`);
      return 0;
    },
  },
};
