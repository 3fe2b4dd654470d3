import { readFile } from 'node:fs/promises';
import { type Command, UsageError } from '../context.ts';

export const preflight: Command = {
  usage: `Usage: differently preflight --config FILE [--json]
Validates the config (each pool's adapter settings too) and checks that every pool's credential reference resolves here
(environment variables; Secrets Manager references are listed, not read). Names each failure.`,
  actions: {
    '': async (ctx) => {
      const path = ctx.values.config;
      if (path === undefined) throw new UsageError(preflight.usage);
      const { io } = ctx;
      // Loaded here only: the adapter registry brings every adapter, which no other command needs.
      const [{ poolConfigProblems }, { parseConfigText }, { credentialResolver }] = await Promise.all([
        import('../../adapters/kinds.ts'),
        import('../../lib/config.ts'),
        import('../../lib/pools/credentials.ts'),
      ]);
      // Every finding, in order: printed as lines, or as one JSON document with --json.
      const problems: string[] = [];
      const notes: string[] = [];
      const finish = (pools: number | undefined): number => {
        const ok = problems.length === 0;
        if (ctx.values.json === true) {
          io.stdout.write(
            `${JSON.stringify({ config: path, ok, pools: pools ?? null, problems, notes }, null, 2)}\n`,
          );
        } else {
          for (const note of notes) io.stdout.write(`${note}\n`);
          for (const problem of problems) io.stderr.write(`error: ${problem}\n`);
          io.stdout.write(ok ? `${path}: ok (${pools} pools)\n` : `${path}: ${problems.length} failure(s)\n`);
        }
        return ok ? 0 : 1;
      };
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch {
        problems.push(`cannot read ${path}`);
        return finish(undefined);
      }
      let config: ReturnType<typeof parseConfigText>;
      try {
        config = parseConfigText(text, path);
      } catch (error) {
        problems.push((error as Error).message);
        return finish(undefined);
      }
      problems.push(...poolConfigProblems(config));
      const resolve = credentialResolver(undefined, io.env);
      for (const pool of config.pools) {
        if (pool.credentials === undefined) continue;
        if ('secretArn' in pool.credentials) {
          notes.push(
            `pool ${pool.name}: credentials in ${pool.credentials.secretArn} (checked at deploy, not here)`,
          );
          continue;
        }
        try {
          await resolve(pool.credentials, pool.name);
          notes.push(`pool ${pool.name}: credentials.env ${pool.credentials.env} resolves`);
        } catch (error) {
          problems.push((error as Error).message);
        }
      }
      return finish(config.pools.length);
    },
  },
};
