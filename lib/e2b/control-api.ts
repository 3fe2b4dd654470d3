import { errors, toErrorResponse } from '../errors.ts';
import type { SandboxOperations } from '../sandboxes/sandbox-operations.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import { untilSettled } from '../sandboxes/until-settled.ts';
import { labelsSchema, reservedLabelPrefix } from '../schemas/common.ts';
import { isTerminal } from '../schemas/sandbox-status.ts';
import { maxTtlSeconds, type SandboxView } from '../schemas/sandboxes.ts';
import { type OrgPrincipal, sandboxToken } from '../tenancy/auth.ts';
import type * as z from '../zod.ts';
import { measureSandbox } from './metrics.ts';
import { e2bNetworkInfo, e2bNetworkPolicy } from './network.ts';
import {
  connectSandboxSchema,
  listQuerySchema,
  newSandboxSchema,
  refusedCreateOptions,
  setTimeoutSchema,
} from './schemas.ts';

/**
 * E2B's control API (create, list, get, timeout, kill, pause, connect) over Differently's own services:
 * the same admission, quotas, placement, project scoping and audit as REST; nothing of its own is stored.
 */
export interface E2bControlDeps {
  sandboxes: SandboxService;
  operations: SandboxOperations;
  /** The installation's template names (config `templates`); E2B's `base` is the default. */
  templates: readonly string[];
  /** E2B template names served by another template, with the capabilities they need (config e2b.templates). */
  templateMap: Readonly<
    Record<string, { template?: string | undefined; capabilities?: string[] | undefined }>
  >;
  /** How long a create waits for its sandbox to run (config api.e2bCreateWaitSeconds). */
  createWaitMs: number;
  /** The pools E2B creates are placed among (config e2b.allowedPools); undefined: every permitted pool. */
  allowedPools: readonly string[] | undefined;
  /** Where `<port>-<sandboxId>.<domain>` reaches a sandbox (config e2b.sandboxDomain): each sandbox's `domain`. */
  sandboxDomain: string | undefined;
}

/** The envd version the facade claims: the SDK turns features on and off by it (docs/e2b.md). */
export const envdVersion = '0.6.1';
/** E2B's default sandbox lifetime when a create names none. */
const defaultTimeoutSeconds = 300;
/** Differently's shortest TTL (its sweep ends sandboxes once a minute): a shorter E2B timeout is refused. */
const minTtlSeconds = 60;

/** A sandbox lifetime E2B asked for, kept as given: one shorter than Differently's shortest is refused. */
function ttlOf(timeout: number): number {
  if (timeout < minTtlSeconds)
    throw errors.invalidRequest(
      `a timeout of ${timeout} s is shorter than the shortest sandbox lifetime Differently keeps, ${minTtlSeconds} s (its sweep ends sandboxes once a minute): ask for ${minTtlSeconds * 1000} ms or more (docs/e2b.md)`,
      { timeoutSeconds: timeout, minimumSeconds: minTtlSeconds },
    );
  return timeout;
}

/** What an E2B create asks placement for: its template's capabilities, and pausing for onTimeout pause. */
function capabilitiesOf(mapped: readonly string[] | undefined, autoPause: boolean): string[] | undefined {
  const wanted = new Set(mapped ?? []);
  // A sandbox that must pause at its timeout goes only where it can pause: elsewhere idleness would stop
  // it, and E2B would see a stopped sandbox as paused.
  if (autoPause) wanted.add('lifecycle.pause-resume');
  return wanted.size === 0 ? undefined : [...wanted];
}

export interface E2bAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** E2B's error body: the HTTP status repeated as a number, which the SDK reads (kill's false, pause's false). */
export function e2bError(status: number, message: string, headers: Record<string, string> = {}): E2bAnswer {
  return { status, body: { code: status, message }, headers };
}

export function parseBody<T extends z.ZodMiniType>(schema: T, value: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw errors.invalidRequest(
      `invalid ${what}: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** The label (under the reserved prefix) recording the E2B template name a mapped template was asked by. */
const e2bTemplateStamp = 'e2b-template';

/** The template name E2B knows the sandbox by. */
function e2bTemplateOf(sandbox: SandboxView): string {
  return sandbox.labels[`${reservedLabelPrefix}${e2bTemplateStamp}`] ?? sandbox.template ?? 'base';
}

/** Differently's statuses as E2B's two: a sandbox E2B would call gone (or not yet made) is none of them. */
function e2bState(sandbox: SandboxView): 'running' | 'paused' | undefined {
  if (['running', 'starting', 'resuming', 'pausing', 'stopping'].includes(sandbox.status)) return 'running';
  if (sandbox.status === 'paused' || sandbox.status === 'stopped') return 'paused';
  return undefined;
}

function tenantLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([key]) => !key.startsWith(reservedLabelPrefix)));
}

export class E2bControlApi {
  readonly #deps: E2bControlDeps;

  constructor(deps: E2bControlDeps) {
    this.#deps = deps;
  }

  /**
   * A create: admitted like any other, then held until the sandbox runs (the SDK calls envd at once and
   * sends no idempotency key). Still waiting at the bound, it is deleted and the answer is 429 with
   * Retry-After, which the SDK retries: no retry ever leaves a second sandbox behind.
   */
  async create(principal: OrgPrincipal, apiKey: string, body: unknown): Promise<E2bAnswer> {
    const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const refused = refusedCreateOptions(raw);
    if (refused.length > 0) {
      return e2bError(400, `Differently does not offer these create options: ${refused.join(', ')}`);
    }
    const request = parseBody(newSandboxSchema, raw, 'create body');
    const mapped = Object.hasOwn(this.#deps.templateMap, request.templateID)
      ? this.#deps.templateMap[request.templateID]
      : undefined;
    const template =
      mapped !== undefined ? mapped.template : request.templateID === 'base' ? undefined : request.templateID;
    if (template !== undefined && !this.#deps.templates.includes(template)) {
      const known = ['base', ...Object.keys(this.#deps.templateMap), ...this.#deps.templates];
      return e2bError(
        400,
        `template ${request.templateID} is not one of this installation's: ${known.join(', ')}`,
      );
    }
    const labels = labelsSchema.safeParse(request.metadata ?? {});
    if (!labels.success) {
      return e2bError(
        400,
        `metadata is not valid as labels: ${labels.error.issues[0]?.message ?? 'invalid'}`,
      );
    }
    const network = e2bNetworkPolicy(raw);
    if ('error' in network) return e2bError(400, network.error);
    const capabilities = capabilitiesOf(mapped?.capabilities, request.autoPause === true);
    const { sandbox } = await this.#deps.sandboxes.create(
      principal,
      {
        ...(template !== undefined && { template }),
        ...(capabilities !== undefined && { capabilities }),
        labels: labels.data,
        ...(request.envVars !== undefined && { env: request.envVars }),
        ...(network.policy !== undefined && { network: network.policy }),
        // autoPause: pause instead of ending when the timeout passes, onto the idle policy: the timeout
        // counts from the last call (E2B counts from create), and the sandbox lives up to the longest TTL.
        ...(request.autoPause === true
          ? {
              ttlSeconds: maxTtlSeconds,
              idle: { afterSeconds: request.timeout ?? defaultTimeoutSeconds, action: 'pause' as const },
            }
          : { ttlSeconds: ttlOf(request.timeout ?? defaultTimeoutSeconds) }),
        ...(this.#deps.allowedPools !== undefined && {
          placement: { allowedPools: [...this.#deps.allowedPools] },
        }),
      },
      undefined,
      // The name the SDK asked for, answered back as its templateID.
      mapped !== undefined ? { stamps: { [e2bTemplateStamp]: request.templateID } } : {},
    );
    const settled = await untilSettled(this.#deps.sandboxes, principal, sandbox.id, this.#deps.createWaitMs);
    if (settled.status === 'running') return { status: 201, body: this.#sandboxAnswer(settled, apiKey) };
    if (settled.status === 'failed') {
      return e2bError(500, `the sandbox could not be made: ${settled.statusMessage ?? 'it failed'}`);
    }
    // Not running within the request's limit: nothing may be left behind for the SDK's retry to double.
    await this.#deps.sandboxes.delete(principal, sandbox.id).catch(() => undefined);
    return e2bError(
      429,
      `the sandbox did not start within ${this.#deps.createWaitMs / 1000} s (${settled.statusMessage ?? settled.status}); it was removed, try again`,
      { 'retry-after': '2' },
    );
  }

  async list(principal: OrgPrincipal, query: Record<string, string>): Promise<E2bAnswer> {
    const { state, metadata, limit, nextToken } = parseBody(listQuerySchema, query, 'query');
    const states = new Set((state ?? 'running,paused').split(',').filter((s) => s !== ''));
    const labels = metadata === undefined ? undefined : Object.fromEntries(new URLSearchParams(metadata));
    const page = await this.#deps.sandboxes.list(
      principal,
      { ...(labels !== undefined && { labels }) },
      { cursor: nextToken, limit: limit ?? 100 },
    );
    const items = page.items.flatMap((sandbox) => {
      const e2b = e2bState(sandbox);
      return e2b !== undefined && states.has(e2b) ? [this.#detail(sandbox, e2b)] : [];
    });
    return {
      status: 200,
      body: items,
      headers:
        page.nextCursor === null || page.nextCursor === undefined ? {} : { 'x-next-token': page.nextCursor },
    };
  }

  async get(principal: OrgPrincipal, id: string, apiKey: string): Promise<E2bAnswer> {
    const sandbox = await this.#visible(principal, id);
    return {
      status: 200,
      body: {
        ...this.#detail(sandbox, e2bState(sandbox) ?? 'running'),
        envdAccessToken: sandboxToken(apiKey, id),
        trafficAccessToken: sandboxToken(apiKey, id),
      },
    };
  }

  async setTimeout(principal: OrgPrincipal, id: string, body: unknown): Promise<E2bAnswer> {
    const { timeout } = parseBody(setTimeoutSchema, body, 'timeout body');
    const ttlSeconds = ttlOf(timeout);
    await this.#visible(principal, id);
    await this.#deps.sandboxes.update(principal, id, { ttlSeconds });
    return { status: 204 };
  }

  async kill(principal: OrgPrincipal, id: string): Promise<E2bAnswer> {
    await this.#visible(principal, id);
    await this.#deps.sandboxes.delete(principal, id);
    return { status: 204 };
  }

  /** getMetrics: one sample measured in the sandbox now (./metrics.ts); the SDK's start and end are not a filter of it. */
  async metrics(principal: OrgPrincipal, id: string): Promise<E2bAnswer> {
    await this.#visible(principal, id);
    return { status: 200, body: await measureSandbox(this.#deps.sandboxes, principal, id) };
  }

  /** A paused sandbox answers 409, which the SDK reads as "already paused" (false). */
  async pause(principal: OrgPrincipal, id: string): Promise<E2bAnswer> {
    const sandbox = await this.#visible(principal, id);
    if (sandbox.status === 'paused' || sandbox.status === 'pausing') {
      return e2bError(409, `sandbox ${id} is already paused`);
    }
    await this.#deps.operations.lifecycle(principal, id, 'pause');
    return { status: 204 };
  }

  /** Connect is E2B's resume: a running sandbox answers 200, one brought back from paused or stopped 201. */
  async connect(principal: OrgPrincipal, id: string, apiKey: string, body: unknown): Promise<E2bAnswer> {
    const { timeout } = parseBody(connectSandboxSchema, body ?? {}, 'connect body');
    const ttlSeconds = timeout === undefined ? undefined : ttlOf(timeout);
    let sandbox = await this.#visible(principal, id);
    let status = 200;
    if (sandbox.status === 'paused' || sandbox.status === 'stopped') {
      await this.#deps.operations.lifecycle(principal, id, sandbox.status === 'paused' ? 'resume' : 'start');
      sandbox = await untilSettled(this.#deps.sandboxes, principal, id, this.#deps.createWaitMs);
      if (sandbox.status !== 'running') {
        return e2bError(503, `sandbox ${id} is still ${sandbox.status}: connect again`, {
          'retry-after': '2',
        });
      }
      status = 201;
    }
    if (ttlSeconds !== undefined) await this.#deps.sandboxes.update(principal, id, { ttlSeconds });
    return { status, body: this.#sandboxAnswer(sandbox, apiKey) };
  }

  /** A sandbox E2B would know: another org's, a deleted or a failed one is not found (code 404). */
  async #visible(principal: OrgPrincipal, id: string): Promise<SandboxView> {
    const sandbox = await this.#deps.sandboxes.get(principal, id);
    if (isTerminal(sandbox.status) || sandbox.status === 'terminating') throw errors.notFound('sandbox', id);
    return sandbox;
  }

  #sandboxAnswer(sandbox: SandboxView, apiKey: string) {
    return {
      sandboxID: sandbox.id,
      templateID: e2bTemplateOf(sandbox),
      clientID: 'differently',
      envdVersion,
      envdAccessToken: sandboxToken(apiKey, sandbox.id),
      // Sent by @e2b/code-interpreter on its context calls, which carry no X-Access-Token: the same token.
      trafficAccessToken: sandboxToken(apiKey, sandbox.id),
      domain: this.#deps.sandboxDomain ?? null,
    };
  }

  #detail(sandbox: SandboxView, state: 'running' | 'paused') {
    return {
      sandboxID: sandbox.id,
      templateID: e2bTemplateOf(sandbox),
      clientID: 'differently',
      startedAt: sandbox.createdAt,
      endAt:
        sandbox.expiresAt ??
        new Date(Date.parse(sandbox.createdAt) + sandbox.ttlSeconds * 1000).toISOString(),
      state,
      cpuCount: Math.max(1, Math.ceil(sandbox.resources.cpu)),
      memoryMB: sandbox.resources.memoryMiB,
      diskSizeMB: sandbox.resources.diskGiB * 1024,
      envdVersion,
      metadata: tenantLabels(sandbox.labels),
      domain: this.#deps.sandboxDomain ?? null,
      ...e2bNetworkInfo(sandbox.network),
    };
  }
}

/** Differently's error as E2B's body, with the status of its code (internal errors masked, as everywhere). */
export function e2bErrorOf(error: unknown): { answer: E2bAnswer; masked: boolean } {
  const { status, body, masked } = toErrorResponse(error);
  // Only what may pass if tried again carries Retry-After (the SDK retries exactly those).
  const retry: Record<string, string> =
    status === 429 && body.error.code !== 'quota_exceeded' ? { 'retry-after': '2' } : {};
  return { answer: e2bError(status, body.error.message, retry), masked };
}
