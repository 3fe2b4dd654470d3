import type { ExecutionAdapter } from '../lib/adapter/port.ts';
import { type Config, formatIssues } from '../lib/config.ts';
import { errors } from '../lib/errors.ts';
import type { PoolSpec } from '../lib/pools/registry.ts';
import * as z from '../lib/zod.ts';
import { daytonaConfigSchema } from './daytona/config.ts';
import { devhostConfigSchema } from './devhost/config.ts';
import { freestyleConfigSchema } from './freestyle/config.ts';
import { lambdaMicrovmsConfigSchema } from './lambda-microvms/config.ts';
import { openSandboxConfigSchema } from './opensandbox/config.ts';
import { remoteConfigSchema } from './remote/config.ts';

/** Everything the control plane knows about one kind of backend. */
interface AdapterKind<S extends z.ZodMiniType> {
  /** The pool's `config`, checked by preflight, synth, `npm start`, the cold start and the admin API. */
  configSchema: S;
  /**
   * The adapter, from the checked config and the pool's resolved credential. Its module is imported here,
   * on first use: a function loads the code of the kinds its pools use, not of every kind (the bundle
   * keeps them all, evaluated only when imported).
   */
  build: (config: z.infer<S>, pool: PoolSpec, credential: string | undefined) => Promise<ExecutionAdapter>;
  /**
   * Who runs the backend: `dev-only` kinds run sandboxes without isolation (allowed with devMode, never
   * deployed); `external` kinds are always someone else's infrastructure (their pools are external
   * whatever the config says); `operator` kinds are the operator's or a vendor's, as the pool declares.
   */
  runs: 'dev-only' | 'external' | 'operator';
  /** The backend reports no capacity of its own: without maxConcurrency a pool takes whatever it is offered. */
  unboundedCapacity?: true;
  /** A vendor's API that answers nothing without a key: a pool without `credentials` is refused. */
  needsCredentials?: true;
}

const kind = <S extends z.ZodMiniType>(facts: AdapterKind<S>) => facts;

/**
 * The one registry of adapter kinds: adding a backend is one entry here (and its folder under adapters/).
 * Config validation, the pool builders, synth, preflight and the trust rules all read it.
 */
export const adapterKinds = {
  devhost: kind({
    configSchema: devhostConfigSchema,
    build: async (config) => new (await import('./devhost/devhost-adapter.ts')).DevhostAdapter(config),
    runs: 'dev-only',
  }),
  fake: kind({
    configSchema: z.record(z.string(), z.never(), { error: 'the fake adapter takes no config' }),
    build: async () => new (await import('./fake/fake-adapter.ts')).FakeAdapter(),
    runs: 'dev-only',
  }),
  remote: kind({
    configSchema: remoteConfigSchema,
    build: async (config, _pool, credential) =>
      new (await import('./remote/remote-adapter.ts')).RemoteAdapter(config, credential),
    runs: 'operator',
  }),
  opensandbox: kind({
    configSchema: openSandboxConfigSchema,
    build: async (config, pool, credential) =>
      new (await import('./opensandbox/opensandbox-adapter.ts')).OpenSandboxAdapter(
        config,
        credential,
        pool.features,
      ),
    runs: 'operator',
    unboundedCapacity: true,
  }),
  daytona: kind({
    configSchema: daytonaConfigSchema,
    build: async (config, _pool, credential) =>
      new (await import('./daytona/daytona-adapter.ts')).DaytonaAdapter(config, credential),
    runs: 'external',
    needsCredentials: true,
  }),
  freestyle: kind({
    configSchema: freestyleConfigSchema,
    build: async (config, _pool, credential) =>
      new (await import('./freestyle/freestyle-adapter.ts')).FreestyleAdapter(config, credential),
    runs: 'external',
    needsCredentials: true,
  }),
  'lambda-microvms': kind({
    configSchema: lambdaMicrovmsConfigSchema,
    // IAM, not a key: the function's own role signs every call.
    build: async (config) =>
      new (await import('./lambda-microvms/lambda-microvms-adapter.ts')).LambdaMicrovmsAdapter(config),
    runs: 'operator',
    unboundedCapacity: true,
  }),
} as const;

export type AdapterKindName = keyof typeof adapterKinds;

export const adapterKindNames = Object.keys(adapterKinds) as AdapterKindName[];

/** The registry's entry for a kind, if this build has one. */
export function adapterKind(name: string): (typeof adapterKinds)[AdapterKindName] | undefined {
  return Object.hasOwn(adapterKinds, name) ? adapterKinds[name as AdapterKindName] : undefined;
}

/** A problem the registry finds with a pool: the field at fault and what is wrong with it. */
export interface PoolKindProblem {
  field: 'adapter' | 'config' | 'credentials';
  message: string;
}

/** An unknown kind, a dev-only kind without devMode, a `config` its kind refuses. */
export function poolKindProblems(pool: PoolSpec, devMode: boolean): PoolKindProblem[] {
  const facts = adapterKind(pool.adapter);
  if (facts === undefined)
    return [{ field: 'adapter', message: `adapter must be one of: ${adapterKindNames.join(', ')}` }];
  const problems: PoolKindProblem[] = [];
  if (facts.runs === 'dev-only' && !devMode)
    problems.push({
      field: 'adapter',
      message: `the ${pool.adapter} adapter runs without isolation and is allowed only with devMode: true`,
    });
  const parsed = facts.configSchema.safeParse(pool.config);
  if (!parsed.success)
    problems.push({ field: 'config', message: `config is not valid: ${formatIssues(parsed.error.issues)}` });
  if ('needsCredentials' in facts && pool.credentials === undefined)
    problems.push({
      field: 'credentials',
      message: `the ${pool.adapter} adapter needs credentials (a reference to its API key: {"env": "NAME"} or {"secretArn": "arn:..."})`,
    });
  return problems;
}

/**
 * Every pool of a config checked against the registry, one line per problem: `pools[0].adapter: ...` for
 * the kind, `pool <name>: config is not valid: ...` for its settings. Preflight, synth, `npm start` and
 * the cold start all refuse a config with any.
 */
export function poolConfigProblems(config: Config): string[] {
  return config.pools.flatMap((pool, index) =>
    poolKindProblems(pool, config.devMode).map((problem) =>
      problem.field === 'config'
        ? `pool ${pool.name}: ${problem.message}`
        : `pools[${index}].${problem.field}: ${problem.message}`,
    ),
  );
}

/** Refuses a config with any pool problem, naming every field at fault (a cold start, `npm start`). */
export function requireValidPools(config: Config, source: string): void {
  const problems = poolConfigProblems(config);
  if (problems.length > 0) throw errors.invalidRequest(`${source} is not valid: ${problems.join('; ')}`);
}

/**
 * Builds a pool's adapter through its kind's entry: undefined for a kind this build does not have, an
 * invalid_request naming the field for a `config` the kind refuses.
 */
export async function buildAdapter(
  pool: PoolSpec,
  credential: string | undefined,
): Promise<ExecutionAdapter | undefined> {
  const facts = adapterKind(pool.adapter);
  if (facts === undefined) return undefined;
  const parsed = facts.configSchema.safeParse(pool.config);
  if (!parsed.success)
    throw errors.invalidRequest(
      `pool ${pool.name}: config is not valid: ${formatIssues(parsed.error.issues)}`,
      {
        pool: pool.name,
      },
    );
  // The entry's build takes its own schema's output: the union of entries needs the cast.
  return (
    facts.build as (
      config: unknown,
      pool: PoolSpec,
      credential: string | undefined,
    ) => Promise<ExecutionAdapter>
  )(parsed.data, pool, credential);
}
