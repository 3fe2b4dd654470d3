import { readFile } from 'node:fs/promises';
import { formatIssues } from '../../lib/config.ts';
import { createPoolSchema, updatePoolSchema } from '../../lib/pools/admin-schemas.ts';
import type * as z from '../../lib/zod.ts';
import type { PoolDetail } from '../../sdk/index.ts';
import { type Command, table, UsageError } from '../context.ts';
import { networkOf } from './sandboxes.ts';

/** A body checked with the server's own schema, so a typo is named before anything is sent. */
function checked<S extends z.ZodMiniType>(schema: S, body: unknown, source = 'body'): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new UsageError(`${source}: ${formatIssues(result.error.issues)}`);
  return result.data;
}

/** A JSON body from a file (`--file`). */
async function jsonFile(path: string | undefined): Promise<unknown> {
  if (path === undefined) throw new UsageError('--file FILE is required (a JSON body)');
  const text = await readFile(path, 'utf8').catch(() => {
    throw new UsageError(`cannot read ${path}`);
  });
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed;
  } catch (error) {
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
  }
}

const poolColumns = ['name', 'adapter', 'trust', 'region', 'healthy', 'active', 'maxConcurrency', 'source'];
const poolRow = (pool: PoolDetail) => ({
  ...pool,
  healthy: pool.health.healthy ? 'yes' : `no: ${pool.health.reason}`,
});

const budgetColumns = ['month', 'monthly', 'spent', 'reserved', 'left'];

/** A monthly budget as typed: a non-negative amount, or `none` to remove it. */
function monthlyAmount(text: string): number | null {
  if (text === 'none') return null;
  const amount = Number(text);
  if (text.trim() === '' || !Number.isFinite(amount) || amount < 0) {
    throw new UsageError(`budget: ${text} is not an amount (a number of 0 or more, or none)`);
  }
  return amount;
}

export const admin: Command = {
  usage: `Usage:
  differently admin orgs create <name> | orgs list | orgs get <id>
  differently admin orgs quota <org-id> maxCPU=N [maxMemoryMiB=N maxDiskGiB=N maxSandboxes=N maxSnapshots=N]
  differently admin orgs budget <org-id> [AMOUNT|none]   (monthly, in the pools' currency; none removes it)
  differently admin orgs network <org-id> --egress deny|allow|allowlist [--allow DEST]... | network <org-id> none
                                                         (the org's default egress policy; none removes it)
  differently admin projects create <org-id> <name> | projects list <org-id>
  differently admin projects budget <org-id> <project-id> [AMOUNT|none]
  differently admin keys create <org-id> <name> [--project P] [--role admin|member]
  differently admin keys list <org-id> | keys revoke <key-id> | keys rotate <key-id>
  differently admin webhooks create <org-id> <url> [--event sandbox.running]... | webhooks list <org-id>
  differently admin webhooks rotate <org-id> <webhook-id> | webhooks delete <org-id> <webhook-id>
  differently admin webhooks deliveries <org-id> <webhook-id>   (newest first: attempts, last answer, delivered)
  differently admin pools list | pools get <name> | pools delete <name>
  differently admin pools create --file POOL.json      (the fields of a pool in the config file)
  differently admin pools update <name> --file PATCH.json
  differently admin policy get
  differently admin policy set [--allow-external] [--external-pool NAME]...
  differently admin reconcile
An admin-role key (--role admin) administers the org it is minted under only: its keys, projects and audit
verification; orgs, quotas, pools, policy and reconcile take the bootstrap admin key.`,
  actions: {
    orgs: async (ctx) => {
      const [verb, arg, ...limits] = ctx.rest;
      const { client } = ctx;
      if (verb === 'budget') {
        const orgId = ctx.need(arg, 'org-id');
        const [amount] = limits;
        const budget =
          amount === undefined
            ? await client.admin.getBudget(orgId)
            : await client.admin.setBudget(orgId, monthlyAmount(amount));
        ctx.print(budget, () => table([budget], budgetColumns));
      } else if (verb === 'network') {
        const orgId = ctx.need(arg, 'org-id');
        const none = limits[0] === 'none';
        const { network } = networkOf(ctx.values.egress, ctx.values.allow);
        if (!none && network === undefined) throw new UsageError('orgs network needs --egress, or none');
        const org = await client.admin.setNetworkPolicy(orgId, none ? null : (network ?? null));
        ctx.print(org, () =>
          table(
            [
              {
                id: org.id,
                egress: org.networkPolicy?.egress ?? 'none',
                allow: org.networkPolicy?.allow?.join(' ') ?? '',
              },
            ],
            ['id', 'egress', 'allow'],
          ),
        );
      } else if (verb === 'quota') {
        const change: Record<string, number> = {};
        for (const [field, value] of Object.entries(ctx.pairs(limits, 'limit')))
          change[field] = Number(value);
        const org = await client.admin.setQuota(ctx.need(arg, 'org-id'), change);
        ctx.print(org, () =>
          table(
            [{ id: org.id, ...org.quota }],
            ['id', 'maxCPU', 'maxMemoryMiB', 'maxDiskGiB', 'maxSandboxes', 'maxSnapshots'],
          ),
        );
      } else if (verb === 'create') {
        const org = await client.admin.createOrg({ name: ctx.need(arg, 'name') });
        ctx.print(org, () => table([org], ['id', 'name']));
      } else if (verb === 'get') {
        const org = await client.admin.getOrg(ctx.need(arg, 'id'));
        ctx.print(org, () => table([org], ['id', 'name']));
      } else {
        const page = await client.admin.listOrgs({ limit: 100 });
        ctx.print(page, () => table(page.items, ['id', 'name', 'createdAt']));
      }
      return 0;
    },
    keys: async (ctx) => {
      const [verb, first, second] = ctx.rest;
      const { client, values } = ctx;
      if (verb === 'create') {
        if (values.role !== undefined && values.role !== 'admin' && values.role !== 'member') {
          throw new UsageError('--role is admin or member');
        }
        const created = await client.admin.createKey(ctx.need(first, 'org-id'), {
          name: ctx.need(second, 'name'),
          ...(values.project !== undefined && { projectId: values.project }),
          ...(values.role !== undefined && { role: values.role }),
        });
        // The only time a key's secret is shown.
        ctx.print(created, () => `${created.id}\n${created.key}\n(the key is shown only now)`);
      } else if (verb === 'rotate') {
        const rotated = await client.admin.rotateKey(ctx.need(first, 'key-id'));
        ctx.print(
          rotated,
          () => `${rotated.id}\n${rotated.key}\n(the new key is shown only now; ${first} is revoked)`,
        );
      } else if (verb === 'revoke') {
        const key = await client.admin.revokeKey(ctx.need(first, 'key-id'));
        ctx.print(key, () => `${key.id} revoked`);
      } else {
        const page = await client.admin.listKeys(ctx.need(first, 'org-id'), { limit: 100 });
        ctx.print(page, () => table(page.items, ['id', 'name', 'role', 'revokedAt']));
      }
      return 0;
    },
    projects: async (ctx) => {
      const [verb, first, second, amount] = ctx.rest;
      if (verb === 'budget') {
        const orgId = ctx.need(first, 'org-id');
        const projectId = ctx.need(second, 'project-id');
        const budget =
          amount === undefined
            ? await ctx.client.admin.getProjectBudget(orgId, projectId)
            : await ctx.client.admin.setProjectBudget(orgId, projectId, monthlyAmount(amount));
        ctx.print(budget, () => table([budget], budgetColumns));
      } else if (verb === 'create') {
        const project = await ctx.client.admin.createProject(ctx.need(first, 'org-id'), {
          name: ctx.need(second, 'name'),
        });
        ctx.print(project, () => table([project], ['id', 'orgId', 'name']));
      } else {
        const page = await ctx.client.admin.listProjects(ctx.need(first, 'org-id'), { limit: 100 });
        ctx.print(page, () => table(page.items, ['id', 'name', 'createdAt']));
      }
      return 0;
    },
    webhooks: async (ctx) => {
      const [verb, orgId, second] = ctx.rest;
      const { client } = ctx;
      const columns = ['id', 'url', 'events', 'previousSecretValidUntil'];
      if (verb === 'create' || verb === 'rotate') {
        const hook =
          verb === 'create'
            ? await client.admin.createWebhook(ctx.need(orgId, 'org-id'), {
                url: ctx.need(second, 'url'),
                ...(ctx.values.event !== undefined && { events: ctx.values.event }),
              })
            : await client.admin.rotateWebhookSecret(
                ctx.need(orgId, 'org-id'),
                ctx.need(second, 'webhook-id'),
              );
        // The only time the signing secret is shown.
        ctx.print(hook, () => `${hook.id}\n${hook.secret}\n(the signing secret is shown only now)`);
      } else if (verb === 'deliveries') {
        const page = await client.admin.listWebhookDeliveries(
          ctx.need(orgId, 'org-id'),
          ctx.need(second, 'webhook-id'),
          { limit: 100 },
        );
        ctx.print(page, () =>
          table(
            page.items.map((item) => ({
              ...item,
              answer: item.lastStatus === null ? (item.lastError ?? '') : String(item.lastStatus),
              deliveredAt: item.deliveredAt ?? 'not yet',
            })),
            ['id', 'type', 'createdAt', 'attempts', 'answer', 'deliveredAt'],
          ),
        );
      } else if (verb === 'delete') {
        const gone = await client.admin.deleteWebhook(
          ctx.need(orgId, 'org-id'),
          ctx.need(second, 'webhook-id'),
        );
        ctx.print(gone, () => `${gone.id} deleted`);
      } else {
        const page = await client.admin.listWebhooks(ctx.need(orgId, 'org-id'));
        ctx.print(page, () =>
          table(
            page.items.map((item) => ({ ...item, events: item.events?.join(' ') ?? 'all' })),
            columns,
          ),
        );
      }
      return 0;
    },
    pools: async (ctx) => {
      const [verb, name] = ctx.rest;
      const { client, values } = ctx;
      if (verb === 'create' || verb === 'update') {
        const body = await jsonFile(values.file);
        const pool =
          verb === 'create'
            ? await client.admin.createPool(checked(createPoolSchema, body, values.file))
            : await client.admin.updatePool(
                ctx.need(name, 'name'),
                checked(updatePoolSchema, body, values.file),
              );
        ctx.print(pool, () => table([poolRow(pool)], poolColumns));
      } else if (verb === 'get') {
        const pool = await client.admin.getPool(ctx.need(name, 'name'));
        ctx.print(pool, () =>
          [
            table([poolRow(pool)], poolColumns),
            `features: ${pool.features.join(', ') || '(none)'}`,
            `capacity: ${pool.capacity === null ? 'not reported' : pool.capacity.bounded ? `${pool.capacity.freeCPU} cpu, ${pool.capacity.freeMemoryMiB} MiB free` : 'unbounded'}`,
            `refreshed: ${pool.refreshedAt ?? 'never'}`,
          ].join('\n'),
        );
      } else if (verb === 'delete') {
        const deleted = await client.admin.deletePool(ctx.need(name, 'name'));
        ctx.print(deleted, () => `${deleted.name} deleted`);
      } else {
        const page = await client.admin.listPools();
        ctx.print(page, () => table(page.items.map(poolRow), poolColumns));
      }
      return 0;
    },
    policy: async (ctx) => {
      const [verb] = ctx.rest;
      const policy =
        verb === 'set'
          ? await ctx.client.admin.setPolicy({
              allowExternal: ctx.values['allow-external'] === true,
              externalPools: ctx.values['external-pool'] ?? [],
            })
          : await ctx.client.admin.getPolicy();
      ctx.print(
        policy,
        () =>
          `external placement: ${policy.allowExternal ? 'allowed' : 'not allowed'}\nexternal pools: ${policy.externalPools.join(', ') || '(none)'}\nsource: ${policy.source}`,
      );
      return 0;
    },
    reconcile: async (ctx) => {
      const report = await ctx.client.admin.reconcile();
      ctx.print(report, () =>
        table(report.pools, ['pool', 'listed', 'orphansDeleted', 'adopted', 'requeued', 'failed', 'skipped']),
      );
      return 0;
    },
  },
};
