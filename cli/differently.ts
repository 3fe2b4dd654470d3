#!/usr/bin/env node
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { poolConfigProblems } from '../adapters/kinds.ts';
import { formatIssues, parseConfigText } from '../lib/config.ts';
import { credentialResolver } from '../lib/pools/credentials.ts';
import { createPoolSchema, updatePoolSchema } from '../lib/schemas/pools.ts';
import {
  DifferentlyClient,
  DifferentlyError,
  DifferentlyNetworkError,
  type PoolDetail,
} from '../sdk/index.ts';

const help: Record<string, string> = {
  '': `differently: the Differently CLI

Usage: differently <command> [options]

Commands:
  sandboxes create|list|get|delete   manage sandboxes
  exec <id> -- <command...>          run a command, streaming its output; exits with its exit code
  files ls|get|put                   list, read and write files
  snapshots create|list|delete       snapshots
  fork <id>                          fork a sandbox
  ports <id> <port>                  expose a port
  usage | templates | trust          the org's quota and usage; templates; the trust report
  admin orgs|projects|keys|pools|policy|reconcile
                                     tenancy, pools, placement policy, operations (admin key)
  audit list|verify                  the org's audit events; recompute the chains (admin key)
  preflight --config FILE            validate a config and check every credential reference

Options everywhere: --endpoint URL (or DIFFERENTLY_ENDPOINT), --key KEY (or DIFFERENTLY_API_KEY),
--json for machine output, --help. Every command has its own --help.`,
  sandboxes: `Usage:
  differently sandboxes create [--pool P]... [--template T] [--ttl SECONDS] [--env K=V]... [--label K=V]... [--wait]
  differently sandboxes list [--status S]
  differently sandboxes get <id>
  differently sandboxes update <id> [--ttl SECONDS] [--label K=V]...
  differently sandboxes stop|start|pause|resume <id> [--wait]
  differently sandboxes delete <id>
A stop, start, pause or resume the backend needs longer for answers with the sandbox stopping, starting,
pausing or resuming (the operations worker finishes it); --wait waits until it has settled.`,
  exec: `Usage: differently exec <id> [--cwd DIR] [--timeout SECONDS] -- <command> [args...]
Streams stdout and stderr as produced and exits with the command's exit code.`,
  files: `Usage:
  differently files ls <id> <path>
  differently files get <id> <path> [--out FILE]
  differently files put <id> <path> <local-file>`,
  snapshots: `Usage:
  differently snapshots create <sandbox-id> [--kind disk|memory] [--wait]    (creating, then ready or failed)
  differently snapshots list
  differently snapshots get <snapshot-id>
  differently snapshots delete <snapshot-id>`,
  fork: 'Usage: differently fork <id> [--wait]',
  ports: 'Usage: differently ports <id> <port>',
  usage: "Usage: differently usage    the org's quota, what it holds and what is left",
  templates: 'Usage: differently templates    the templates this installation offers',
  trust: "Usage: differently trust    each pool's trust, isolation, features and limitations; the policy",
  admin: `Usage:
  differently admin orgs create <name> | orgs list | orgs get <id>
  differently admin orgs quota <org-id> maxCPU=N [maxMemoryMiB=N maxDiskGiB=N maxSandboxes=N maxSnapshots=N]
  differently admin projects create <org-id> <name> | projects list <org-id>
  differently admin keys create <org-id> <name> [--project P] [--role admin|member]
  differently admin keys list <org-id> | keys revoke <key-id> | keys rotate <key-id>
  differently admin pools list | pools get <name> | pools delete <name>
  differently admin pools create --file POOL.json      (the fields of a pool in the config file)
  differently admin pools update <name> --file PATCH.json
  differently admin policy get
  differently admin policy set [--allow-external] [--external-pool NAME]...
  differently admin reconcile`,
  audit: `Usage:
  differently audit list              the org's audit events (org key)
  differently audit verify [--org ID] recompute the chains (admin key)`,
  preflight: `Usage: differently preflight --config FILE
Validates the config (each pool's adapter settings too) and checks that every pool's credential reference resolves here
(environment variables; Secrets Manager references are listed, not read). Names each failure.`,
};

class UsageError extends Error {}

const options = {
  endpoint: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
  pool: { type: 'string', multiple: true },
  template: { type: 'string' },
  ttl: { type: 'string' },
  env: { type: 'string', multiple: true },
  label: { type: 'string', multiple: true },
  wait: { type: 'boolean' },
  status: { type: 'string' },
  cwd: { type: 'string' },
  timeout: { type: 'string' },
  out: { type: 'string' },
  kind: { type: 'string' },
  project: { type: 'string' },
  org: { type: 'string' },
  config: { type: 'string' },
  role: { type: 'string' },
  file: { type: 'string' },
  'allow-external': { type: 'boolean' },
  'external-pool': { type: 'string', multiple: true },
} as const;

/** A progress line on stderr (stdout stays the command's output, for --json and pipes). */
function note(line: string): void {
  process.stderr.write(`${line}\n`);
}

function pairs(values: string[] | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values ?? []) {
    const eq = value.indexOf('=');
    if (eq <= 0) throw new UsageError(`--${what} takes KEY=VALUE, not ${value}`);
    out[value.slice(0, eq)] = value.slice(eq + 1);
  }
  return out;
}

function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cells = rows.map((row) => columns.map((c) => String(row[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const command = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values, positionals } = parseArgs({
    args: dash >= 0 ? argv.slice(0, dash) : argv,
    options,
    allowPositionals: true,
    strict: true,
  });
  const [group = '', action, ...rest] = positionals;
  if (values.help === true || group === '' || help[group] === undefined) {
    process.stdout.write(`${help[help[group] === undefined ? '' : group]}\n`);
    return values.help === true || group === '' ? 0 : 2;
  }
  const print = (value: unknown, human: () => string) =>
    process.stdout.write(`${values.json === true ? JSON.stringify(value, null, 2) : human()}\n`);

  if (group === 'preflight') return preflight(values.config);

  const endpoint = values.endpoint ?? process.env.DIFFERENTLY_ENDPOINT;
  const key = values.key ?? process.env.DIFFERENTLY_API_KEY;
  if (endpoint === undefined || key === undefined) {
    throw new UsageError('set --endpoint and --key (or DIFFERENTLY_ENDPOINT and DIFFERENTLY_API_KEY)');
  }
  const client = new DifferentlyClient({ endpoint, apiKey: key });
  const need = (value: string | undefined, name: string) => {
    if (value === undefined) throw new UsageError(`missing <${name}>\n${help[group]}`);
    return value;
  };
  const wait = async (id: string) => {
    const progress = process.stderr.isTTY ? (s: string) => process.stderr.write(`\r${s}`) : () => undefined;
    progress(`waiting for ${id} to run...`);
    const sandbox = await client.waitUntilRunning(id, { intervalMs: 250 });
    progress(`${' '.repeat(60)}\r`);
    return sandbox;
  };
  const sandboxColumns = ['id', 'status', 'pool', 'statusMessage'];

  switch (`${group} ${action ?? ''}`.trim()) {
    case 'sandboxes create': {
      let sandbox = await client.createSandbox({
        ...(values.pool !== undefined && { placement: { allowedPools: values.pool } }),
        ...(values.template !== undefined && { template: values.template }),
        ...(values.ttl !== undefined && { ttlSeconds: Number(values.ttl) }),
        ...(values.env !== undefined && { env: pairs(values.env, 'env') }),
        ...(values.label !== undefined && { labels: pairs(values.label, 'label') }),
      });
      if (values.wait === true) sandbox = await wait(sandbox.id);
      print(sandbox, () => table([sandbox], sandboxColumns));
      return 0;
    }
    case 'sandboxes list': {
      const page = await client.listSandboxes({
        ...(values.status !== undefined && { status: values.status }),
        limit: 100,
      });
      print(page, () => table(page.items, sandboxColumns));
      return 0;
    }
    case 'sandboxes get': {
      const sandbox = await client.getSandbox(need(rest[0], 'id'));
      print(sandbox, () => table([sandbox], [...sandboxColumns, 'expiresAt']));
      return 0;
    }
    case 'sandboxes update': {
      const updated = await client.updateSandbox(need(rest[0], 'id'), {
        ...(values.ttl !== undefined && { ttlSeconds: Number(values.ttl) }),
        ...(values.label !== undefined && { labels: pairs(values.label, 'label') }),
      });
      print(updated, () =>
        [table([updated], [...sandboxColumns, 'expiresAt']), updated.providerTtl?.note]
          .filter(Boolean)
          .join('\n'),
      );
      return 0;
    }
    case 'sandboxes stop':
    case 'sandboxes start':
    case 'sandboxes pause':
    case 'sandboxes resume': {
      const id = need(rest[0], 'id');
      const options = { wait: false };
      let moved =
        action === 'stop'
          ? await client.stop(id, options)
          : action === 'start'
            ? await client.start(id, options)
            : action === 'pause'
              ? await client.pause(id, options)
              : await client.resume(id, options);
      if (values.wait === true && moved.status !== 'running' && moved.status.endsWith('ing')) {
        note(`${moved.id} is ${moved.status}; waiting for it to settle...`);
        moved = await client.waitUntilSettled(id, { intervalMs: 250 });
      }
      print(moved, () => `${moved.id} ${moved.status}`);
      return 0;
    }
    case 'sandboxes delete': {
      const sandbox = await client.deleteSandbox(need(rest[0], 'id'));
      print(sandbox, () => `${sandbox.id} ${sandbox.status}`);
      return 0;
    }
    case `exec ${action}`: {
      if (command.length === 0) throw new UsageError(help.exec ?? '');
      let exitCode = 1;
      for await (const event of client.execStream(need(action, 'id'), {
        args: command,
        ...(values.cwd !== undefined && { cwd: values.cwd }),
        ...(values.timeout !== undefined && { timeoutSeconds: Number(values.timeout) }),
      })) {
        if (values.json === true) process.stdout.write(`${JSON.stringify(event)}\n`);
        else if ('stream' in event)
          (event.stream === 'stdout' ? process.stdout : process.stderr).write(event.data);
        if ('exitCode' in event) exitCode = event.exitCode;
        if ('error' in event) {
          process.stderr.write(`error: ${event.error.code}: ${event.error.message}\n`);
          exitCode = 1;
        }
      }
      return exitCode;
    }
    case 'files ls': {
      const listing = await client.listFiles(need(rest[0], 'id'), need(rest[1], 'path'));
      print(listing, () => table(listing.items, ['name', 'isDir', 'size']));
      return 0;
    }
    case 'files get': {
      const content = await client.readFile(need(rest[0], 'id'), need(rest[1], 'path'));
      if (values.out !== undefined) await writeFile(values.out, content);
      else process.stdout.write(content);
      return 0;
    }
    case 'files put': {
      await client.writeFile(
        need(rest[0], 'id'),
        need(rest[1], 'path'),
        await readFile(need(rest[2], 'local-file')),
      );
      print({ written: true }, () => `wrote ${rest[1]}`);
      return 0;
    }
    case 'snapshots create': {
      let snapshot = await client.createSnapshot(
        need(rest[0], 'sandbox-id'),
        values.kind === 'memory' ? 'memory' : 'disk',
      );
      if (values.wait === true && snapshot.status === 'creating') {
        note(`${snapshot.id} is being taken; waiting until it is ready...`);
        snapshot = await client.waitUntilSnapshotReady(snapshot.id, { intervalMs: 250 });
      }
      print(snapshot, () => table([snapshot], ['id', 'status', 'kind', 'pool', 'sizeBytes']));
      return 0;
    }
    case 'snapshots list': {
      const page = await client.listSnapshots({ limit: 100 });
      print(page, () => table(page.items, ['id', 'sandboxId', 'kind', 'pool', 'createdAt']));
      return 0;
    }
    case 'snapshots get': {
      const snapshot = await client.getSnapshot(need(rest[0], 'snapshot-id'));
      print(snapshot, () => table([snapshot], ['id', 'sandboxId', 'kind', 'pool', 'sizeBytes', 'createdAt']));
      return 0;
    }
    case 'snapshots delete': {
      const result = await client.deleteSnapshot(need(rest[0], 'snapshot-id'));
      print(result, () => `${result.id} deleted${result.note === undefined ? '' : ` (${result.note})`}`);
      return 0;
    }
    case `fork ${action}`: {
      let child = await client.fork(need(action, 'id'));
      if (values.wait === true) child = await wait(child.id);
      print(child, () => table([child], sandboxColumns));
      return 0;
    }
    case `ports ${action}`: {
      const exposed = await client.exposePort(need(action, 'id'), Number(need(rest[0], 'port')));
      print(exposed, () => exposed.url);
      return 0;
    }
    case 'admin orgs': {
      const [verb, arg, ...limits] = rest;
      if (verb === 'quota') {
        const change: Record<string, number> = {};
        for (const [field, value] of Object.entries(pairs(limits, 'limit'))) change[field] = Number(value);
        const org = await client.admin.setQuota(need(arg, 'org-id'), change);
        print(org, () =>
          table(
            [{ id: org.id, ...org.quota }],
            ['id', 'maxCPU', 'maxMemoryMiB', 'maxDiskGiB', 'maxSandboxes', 'maxSnapshots'],
          ),
        );
      } else if (verb === 'create') {
        const org = await client.admin.createOrg({ name: need(arg, 'name') });
        print(org, () => table([org], ['id', 'name']));
      } else if (verb === 'get') {
        const org = await client.admin.getOrg(need(arg, 'id'));
        print(org, () => table([org], ['id', 'name']));
      } else {
        const page = await client.admin.listOrgs({ limit: 100 });
        print(page, () => table(page.items, ['id', 'name', 'createdAt']));
      }
      return 0;
    }
    case 'admin keys': {
      const [verb, first, second] = rest;
      if (verb === 'create') {
        if (values.role !== undefined && values.role !== 'admin' && values.role !== 'member') {
          throw new UsageError('--role is admin or member');
        }
        const created = await client.admin.createKey(need(first, 'org-id'), {
          name: need(second, 'name'),
          ...(values.project !== undefined && { projectId: values.project }),
          ...(values.role !== undefined && { role: values.role }),
        });
        // The only time a key's secret is shown.
        print(created, () => `${created.id}\n${created.key}\n(the key is shown only now)`);
      } else if (verb === 'rotate') {
        const rotated = await client.admin.rotateKey(need(first, 'key-id'));
        print(
          rotated,
          () => `${rotated.id}\n${rotated.key}\n(the new key is shown only now; ${first} is revoked)`,
        );
      } else if (verb === 'revoke') {
        const key = await client.admin.revokeKey(need(first, 'key-id'));
        print(key, () => `${key.id} revoked`);
      } else {
        const page = await client.admin.listKeys(need(first, 'org-id'), { limit: 100 });
        print(page, () => table(page.items, ['id', 'name', 'role', 'revokedAt']));
      }
      return 0;
    }
    case 'admin projects': {
      const [verb, first, second] = rest;
      if (verb === 'create') {
        const project = await client.admin.createProject(need(first, 'org-id'), {
          name: need(second, 'name'),
        });
        print(project, () => table([project], ['id', 'orgId', 'name']));
      } else {
        const page = await client.admin.listProjects(need(first, 'org-id'), { limit: 100 });
        print(page, () => table(page.items, ['id', 'name', 'createdAt']));
      }
      return 0;
    }
    case 'admin pools': {
      const [verb, name] = rest;
      const poolColumns = [
        'name',
        'adapter',
        'trust',
        'region',
        'healthy',
        'active',
        'maxConcurrency',
        'source',
      ];
      const row = (pool: PoolDetail) => ({
        ...pool,
        healthy: pool.health.healthy ? 'yes' : `no: ${pool.health.reason}`,
      });
      if (verb === 'create' || verb === 'update') {
        const body = await jsonFile(values.file);
        // Checked here with the server's own schemas, so a typo is named before anything is sent.
        const pool =
          verb === 'create'
            ? await client.admin.createPool(checked(createPoolSchema, body, values.file))
            : await client.admin.updatePool(need(name, 'name'), checked(updatePoolSchema, body, values.file));
        print(pool, () => table([row(pool)], poolColumns));
      } else if (verb === 'get') {
        const pool = await client.admin.getPool(need(name, 'name'));
        print(pool, () =>
          [
            table([row(pool)], poolColumns),
            `features: ${pool.features.join(', ') || '(none)'}`,
            `capacity: ${pool.capacity === null ? 'not reported' : pool.capacity.bounded ? `${pool.capacity.freeCPU} cpu, ${pool.capacity.freeMemoryMiB} MiB free` : 'unbounded'}`,
            `refreshed: ${pool.refreshedAt ?? 'never'}`,
          ].join('\n'),
        );
      } else if (verb === 'delete') {
        const deleted = await client.admin.deletePool(need(name, 'name'));
        print(deleted, () => `${deleted.name} deleted`);
      } else {
        const page = await client.admin.listPools();
        print(page, () => table(page.items.map(row), poolColumns));
      }
      return 0;
    }
    case 'admin policy': {
      const [verb] = rest;
      const policy =
        verb === 'set'
          ? await client.admin.setPolicy({
              allowExternal: values['allow-external'] === true,
              externalPools: values['external-pool'] ?? [],
            })
          : await client.admin.getPolicy();
      print(
        policy,
        () =>
          `external placement: ${policy.allowExternal ? 'allowed' : 'not allowed'}\nexternal pools: ${policy.externalPools.join(', ') || '(none)'}\nsource: ${policy.source}`,
      );
      return 0;
    }
    case 'usage': {
      const usage = await client.usage();
      const rows = Object.entries(usage.usage).map(([field, used]) => ({
        field,
        used,
        available: usage.available[field as keyof typeof usage.available],
      }));
      print(usage, () => table(rows, ['field', 'used', 'available']));
      return 0;
    }
    case 'templates': {
      const templates = await client.templates();
      print(templates, () => table(templates.items, ['name', 'description', 'image']));
      return 0;
    }
    case 'trust': {
      const report = await client.trust();
      print(report, () =>
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
    }
    case 'admin reconcile': {
      const report = await client.admin.reconcile();
      print(report, () =>
        table(report.pools, ['pool', 'listed', 'orphansDeleted', 'adopted', 'requeued', 'failed', 'skipped']),
      );
      return 0;
    }
    case 'audit list': {
      const page = await client.audit({ limit: 100 });
      print(page, () => table(page.items, ['seq', 'at', 'actor', 'action', 'target']));
      return 0;
    }
    case 'audit verify': {
      const result = await client.admin.verifyAudit(values.org);
      print(result, () =>
        result.ok
          ? `ok: ${result.checked} events checked`
          : `BROKEN at seq ${result.firstBroken?.seq}: ${result.firstBroken?.reason}`,
      );
      return result.ok ? 0 : 1;
    }
    default:
      throw new UsageError(help[group] ?? help[''] ?? '');
  }
}

function checked<S extends z.ZodType>(schema: S, body: unknown, source = 'body'): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new UsageError(`${source}: ${formatIssues(result.error.issues)}`);
  return result.data;
}

/** A JSON body from a file (`--file`), checked against the route's schema before it is sent. */
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

/** Validates a config file and checks every credential reference, naming each failure. */
async function preflight(path: string | undefined): Promise<number> {
  if (path === undefined) throw new UsageError(help.preflight ?? '');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    process.stderr.write(`error: cannot read ${path}\n`);
    return 1;
  }
  let failures = 0;
  let config: ReturnType<typeof parseConfigText>;
  try {
    config = parseConfigText(text, path);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    return 1;
  }
  for (const problem of poolConfigProblems(config)) {
    failures++;
    process.stderr.write(`error: ${problem}\n`);
  }
  const resolve = credentialResolver();
  for (const pool of config.pools) {
    if (pool.credentials === undefined) continue;
    if ('secretArn' in pool.credentials) {
      process.stdout.write(
        `pool ${pool.name}: credentials in ${pool.credentials.secretArn} (checked at deploy, not here)\n`,
      );
      continue;
    }
    try {
      await resolve(pool.credentials, pool.name);
      process.stdout.write(`pool ${pool.name}: credentials.env ${pool.credentials.env} resolves\n`);
    } catch (error) {
      failures++;
      process.stderr.write(`error: ${(error as Error).message}\n`);
    }
  }
  process.stdout.write(
    failures === 0 ? `${path}: ok (${config.pools.length} pools)\n` : `${path}: ${failures} failure(s)\n`,
  );
  return failures === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof DifferentlyError)
      process.stderr.write(`error: ${error.code}: ${error.message.replace(`${error.code}: `, '')}\n`);
    else if (error instanceof DifferentlyNetworkError) process.stderr.write(`error: ${error.message}\n`);
    else if (error instanceof UsageError || error instanceof TypeError)
      process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`error: ${(error as Error).message}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
