import { type Command, table } from '../context.ts';

/** What an org key reads about its org and the installation: ports, usage, templates, trust. */
export const ports: Command = {
  usage: 'Usage: differently ports <id> <port>',
  argumentFirst: true,
  actions: {
    '': async (ctx, id) => {
      const exposed = await ctx.client.exposePort(
        ctx.need(id || undefined, 'id'),
        ctx.wholeNumber(ctx.need(ctx.rest[0], 'port'), 'port', 1) as number,
      );
      ctx.print(exposed, () => exposed.url);
      return 0;
    },
  },
};

export const usage: Command = {
  usage: "Usage: differently usage    the org's quota and budget, what it holds and spent, and what is left",
  actions: {
    '': async (ctx) => {
      const usage = await ctx.client.usage();
      const rows = Object.entries(usage.usage).map(([field, used]) => ({
        field,
        used,
        available: usage.available[field as keyof typeof usage.available],
      }));
      // Budgets in the same table: what this month spent and holds, and what is left (none: no budget).
      const budgets = [
        ['budget', usage.budget] as const,
        ...(usage.projectBudget === undefined ? [] : [['project budget', usage.projectBudget] as const]),
      ].map(([field, budget]) => ({
        field: `${field} ${budget.month}`,
        used: budget.spent + budget.reserved,
        available: budget.left ?? 'no limit',
      }));
      ctx.print(usage, () => table([...rows, ...budgets], ['field', 'used', 'available']));
      return 0;
    },
  },
};

export const templates: Command = {
  usage: 'Usage: differently templates    the templates this installation offers',
  actions: {
    '': async (ctx) => {
      const templates = await ctx.client.templates();
      ctx.print(templates, () => table(templates.items, ['name', 'description', 'image']));
      return 0;
    },
  },
};

export const trust: Command = {
  usage: "Usage: differently trust    each pool's trust, isolation, features and limitations; the policy",
  actions: {
    '': async (ctx) => {
      const report = await ctx.client.trust();
      ctx.print(report, () =>
        [
          table(
            report.pools.map((p) => ({
              ...p,
              verified: p.isolationVerified ? 'yes' : 'no',
              external: p.receivesExternalWork ? 'yes' : 'no',
            })),
            ['name', 'adapter', 'trust', 'isolation', 'verified', 'external'],
          ),
          `policy: external placement ${report.policy.allowExternal ? 'allowed' : 'not allowed'} (${report.externalPoolsInUse.join(', ') || 'no external pools in use'})`,
          ...report.pools.flatMap((p) => p.limitations.map((l) => `${p.name}: ${l}`)),
        ].join('\n'),
      );
      return 0;
    },
  },
};

export const audit: Command = {
  usage: `Usage:
  differently audit list              the org's audit events (org key)
  differently audit verify [--org ID] recompute the chains (admin key)`,
  actions: {
    list: async (ctx) => {
      const page = await ctx.client.audit({ limit: 100 });
      ctx.print(page, () => table(page.items, ['seq', 'at', 'actor', 'action', 'target']));
      return 0;
    },
    verify: async (ctx) => {
      const result = await ctx.client.admin.verifyAudit(ctx.values.org);
      ctx.print(result, () =>
        result.ok
          ? `ok: ${result.checked} events checked`
          : `BROKEN at seq ${result.firstBroken?.seq}: ${result.firstBroken?.reason}`,
      );
      return result.ok ? 0 : 1;
    },
  },
};
