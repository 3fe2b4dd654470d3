import { readFile } from 'node:fs/promises';
import { type Command, UsageError } from '../context.ts';

export const preflight: Command = {
  usage: `Usage: differently preflight --config FILE
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
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch {
        io.stderr.write(`error: cannot read ${path}\n`);
        return 1;
      }
      let failures = 0;
      let config: ReturnType<typeof parseConfigText>;
      try {
        config = parseConfigText(text, path);
      } catch (error) {
        io.stderr.write(`error: ${(error as Error).message}\n`);
        return 1;
      }
      for (const problem of poolConfigProblems(config)) {
        failures++;
        io.stderr.write(`error: ${problem}\n`);
      }
      const resolve = credentialResolver();
      for (const pool of config.pools) {
        if (pool.credentials === undefined) continue;
        if ('secretArn' in pool.credentials) {
          io.stdout.write(
            `pool ${pool.name}: credentials in ${pool.credentials.secretArn} (checked at deploy, not here)\n`,
          );
          continue;
        }
        try {
          await resolve(pool.credentials, pool.name);
          io.stdout.write(`pool ${pool.name}: credentials.env ${pool.credentials.env} resolves\n`);
        } catch (error) {
          failures++;
          io.stderr.write(`error: ${(error as Error).message}\n`);
        }
      }
      io.stdout.write(
        failures === 0 ? `${path}: ok (${config.pools.length} pools)\n` : `${path}: ${failures} failure(s)\n`,
      );
      return failures === 0 ? 0 : 1;
    },
  },
};
