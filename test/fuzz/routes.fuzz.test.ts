import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import type { RouteDefinition } from '../../lib/http/types.ts';
import { installationChain } from '../../lib/store/audit/port.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { envelopeSchema } from '../helpers/http-client.ts';

/**
 * Generated requests to every route of the router's own table: bodies (arbitrary JSON, shapes close to
 * the real ones with hostile values, deep nesting, oversized, not JSON at all), query strings, path
 * params, headers, unicode and NUL bytes, label-prefix tricks, path traversal in file paths. Nothing
 * answers 5xx, every error is the envelope, and a rejected request writes nothing.
 */
const runsPerRoute = Number(process.env.FUZZ_RUNS ?? 60);

const hostileStrings = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    '../../etc/passwd',
    '/work/../../../etc/shadow',
    '%2e%2e%2f%2e%2e%2fetc',
    'C:\\Windows\\system32',
    '\u202e\u0635\ud83d\ude00',
    ' '.repeat(300),
    'x'.repeat(5000),
    "'; DROP TABLE sandboxes; --",
    '$' + '{jndi:ldap://x}',
    '__proto__',
    'constructor',
  ),
);

/** Keys that try to get under the reserved label prefix. */
const labelKeys = fc.oneof(
  fc.constantFrom(
    'differently.dev/org',
    'Differently.Dev/org',
    'DIFFERENTLY.DEV/sandbox-id',
    ' differently.dev/x',
    'differently.dev\u0000/x',
    'differently.dev%2Fx',
    'team',
    '__proto__',
  ),
  hostileStrings,
);

const numbers = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0.0000001),
  // Tiny and huge: below any granularity, and past what a store's number type holds.
  fc.constantFrom(1e-130, 5e-324, 0.0004, 0.2500001, 1e-7, 1e125, 9.99e125, 2 ** 53),
);

/** Bodies shaped like the real ones, with hostile values in every field. */
const nearlyValid = fc.record(
  {
    name: hostileStrings,
    template: hostileStrings,
    command: hostileStrings,
    args: fc.array(hostileStrings, { maxLength: 4 }),
    stdin: hostileStrings,
    cwd: hostileStrings,
    port: numbers,
    kind: fc.constantFrom('disk', 'memory', 'both', ''),
    ttlSeconds: numbers,
    timeoutSeconds: numbers,
    resources: fc.record({ cpu: numbers, memoryMiB: numbers, diskGiB: numbers }, { requiredKeys: [] }),
    labels: fc.oneof(
      fc.dictionary(labelKeys, hostileStrings, { maxKeys: 4 }),
      // Many labels, at and past the count limit.
      fc
        .integer({ min: 60, max: 70 })
        .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 'v'.repeat(255)]))),
    ),
    env: fc.oneof(
      fc.dictionary(hostileStrings, hostileStrings, { maxKeys: 4 }),
      // Item-size edges: values near the per-variable and total limits.
      fc
        .integer({ min: 1, max: 4 })
        .map((n) =>
          Object.fromEntries(Array.from({ length: n }, (_, i) => [`E${i}`, 'v'.repeat(32 * 1024 - 8)])),
        ),
    ),
    capabilities: fc.array(fc.oneof(hostileStrings, fc.constantFrom('isolation.none', 'gpu', 'exec')), {
      maxLength: 3,
    }),
    placement: fc.record(
      {
        allowedPools: fc.array(hostileStrings, { maxLength: 3 }),
        regions: fc.array(hostileStrings, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    projectId: hostileStrings,
    role: fc.constantFrom('admin', 'member', 'root', ''),
    adapter: fc.constantFrom('fake', 'devhost', 'remote', 'firecracker', ''),
    config: fc.dictionary(hostileStrings, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    allowExternal: fc.oneof(fc.boolean(), hostileStrings),
    externalPools: fc.array(hostileStrings, { maxLength: 3 }),
    maxCPU: numbers,
    quota: fc.dictionary(hostileStrings, numbers, { maxKeys: 3 }),
  },
  { requiredKeys: [] },
);

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

/** A raw request body: JSON text of several kinds, or not JSON at all. */
const bodies = fc.oneof(
  { weight: 4, arbitrary: nearlyValid.map((value) => JSON.stringify(value)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: hostileStrings },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      deep(20_000),
      '{"a":',
      '\u0000\u0001\u0002',
      'null',
      '[]',
      '"x"',
      `{"labels":{${'"k":1,'.repeat(2)}"k":2}}`,
    ),
  },
  { weight: 1, arbitrary: fc.constant(`{"name":"${'x'.repeat(1_100_000)}"}`) },
);

const queries = fc
  .tuple(
    // File routes need a path: often a real one, often a hostile one.
    fc.option(fc.oneof(fc.constantFrom('/work/a.txt', '/work', '/'), hostileStrings), { nil: undefined }),
    fc.dictionary(
      fc.oneof(
        fc.constantFrom('limit', 'cursor', 'status', 'label', 'projectId', 'stream', 'orgId'),
        hostileStrings,
      ),
      fc.oneof(
        hostileStrings,
        fc.integer().map(String),
        fc.constantFrom('-1', '0', '101', '1e9', 'NaN', 'true', '1'),
      ),
      { maxKeys: 3 },
    ),
  )
  .map(([path, rest]) => (path === undefined ? rest : { ...rest, path }));

describe.each([
  ['memory store', undefined],
  ['DynamoDB store', 'dynamodb'],
] as const)('fuzzing every route (%s)', (_store, kind) => {
  let e: E2e;
  // DynamoDB Local is slower: fewer generated requests per route there, the same kinds.
  const runs = kind === undefined ? runsPerRoute : Math.max(10, Math.floor(runsPerRoute / 3));
  const ids: Record<string, string[]> = {};
  const counts: Record<string, { cases: number; status: Record<number, number> }> = {};

  beforeAll(async () => {
    e = await startE2e({
      fakes: { fake: { adapter: new FakeAdapter() } },
      ...(kind === 'dynamodb' && { dynamodbEndpoint: inject('dynamodbEndpoint') }),
    });
    const admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    const tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
    const sandbox = await e.running('fake');
    const snapshot = await tenant.createSnapshot(sandbox.id);
    const orgs = await admin.admin.listOrgs();
    const org = orgs.items[0]?.id ?? '';
    const key = (await admin.admin.createKey(org, { name: 'fuzz' })).id;
    ids.sandbox = [sandbox.id];
    ids.snapshot = [snapshot.id];
    ids.org = [org];
    ids.key = [key];
    ids.name = ['fake', 'local'];
  });

  afterAll(async () => {
    await e?.stop();
    const rows = Object.entries(counts).map(
      ([route, c]) =>
        `${route.padEnd(48)} ${String(c.cases).padStart(4)} cases  ${Object.entries(c.status)
          .map(([s, n]) => `${s}x${n}`)
          .join(' ')}`,
    );
    console.log(
      `fuzz cases per route (${runs} generated each, plus fixed hostile bodies):\n${rows.join('\n')}`,
    );
  });

  /**
   * What a rejected request must leave as it was: the org's and the installation's audit chains (every
   * change is recorded there) and the org list. Workers finishing earlier, accepted requests write as
   * `system` meanwhile, so only events by a key count.
   */
  const writes = async () => {
    const store = e.runtime.plane.store;
    const byKeys: string[] = [];
    for (const chain of [ids.org?.[0] ?? '', installationChain]) {
      await store.linkAudit(chain);
      let cursor: string | undefined;
      do {
        const page = await store.listAudit(chain, { limit: 100, cursor });
        for (const event of page.items) if (event.actor !== 'system') byKeys.push(`${chain}:${event.seq}`);
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    }
    return JSON.stringify([
      byKeys.length,
      byKeys.at(-1),
      (await store.listOrgs({ limit: 100 })).items.length,
    ]);
  };

  const paramFor = (route: RouteDefinition, name: string) => {
    const kind =
      name === 'name'
        ? 'name'
        : route.path.startsWith('/v1/snapshots')
          ? 'snapshot'
          : route.path.startsWith('/v1/admin/orgs')
            ? 'org'
            : route.path.startsWith('/v1/admin/keys')
              ? 'key'
              : 'sandbox';
    return fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...(ids[kind] ?? ['x'])) },
      { weight: 2, arbitrary: hostileStrings },
      // Sent as they are, not encoded: malformed %-escapes must be a 400, never a 500.
      {
        weight: 1,
        arbitrary: fc.constantFrom('%ff', '%E0%A4%A', '%', '%%41', '%C0%AF', 'a%2').map((raw) => ({ raw })),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'org_01ARZ3NDEKTSV4RRFFQ69G5FAV'),
      },
    );
  };

  it('answers every generated request without a 5xx, always in the envelope, writing nothing when it refuses', {
    timeout: 600_000,
  }, async () => {
    const routes = e.runtime.plane.routes;
    for (const route of routes) {
      const label = `${route.method} ${route.path}`;
      counts[label] = { cases: 0, status: {} };
      const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
      const request = fc.record({
        params: fc.tuple(...params.map((p) => paramFor(route, p))),
        query: queries,
        body: bodies,
        idempotencyKey: fc.option(hostileStrings, { nil: undefined }),
        contentType: fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', ''),
        headers: fc.dictionary(
          fc.constantFrom(
            'accept',
            'accept-encoding',
            'x-forwarded-for',
            'x-amzn-trace-id',
            'x-request-id',
            'origin',
            'x-api-key',
          ),
          fc.string({ maxLength: 200 }).filter((v) => /^[\x20-\x7e]*$/.test(v)),
          { maxKeys: 3 },
        ),
      });
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          let path = route.path;
          r.params.forEach((value, i) => {
            const segment = typeof value === 'string' ? encodeURIComponent(value) : value.raw;
            path = path.replace(`{${params[i]}}`, segment);
          });
          const search = new URLSearchParams(r.query).toString();
          const key = route.auth === 'admin' ? e.runtime.adminKey : route.auth === 'org' ? e.key : undefined;
          const before = await writes();
          const response = await fetch(`${e.runtime.url}${path}${search === '' ? '' : `?${search}`}`, {
            method: route.method,
            headers: {
              ...r.headers,
              ...(key !== undefined && { authorization: `Bearer ${key}` }),
              ...(r.contentType !== '' && { 'content-type': r.contentType }),
              ...(r.idempotencyKey !== undefined &&
                /^[\x20-\x7e]*$/.test(r.idempotencyKey) && { 'idempotency-key': r.idempotencyKey }),
            },
            ...(route.method !== 'GET' && route.method !== 'DELETE' && { body: r.body }),
          });
          const text = await response.text();
          const entry = counts[label];
          if (entry !== undefined) {
            entry.cases++;
            entry.status[response.status] = (entry.status[response.status] ?? 0) + 1;
          }
          expect(response.status, `${label} ${path}?${search}: ${text.slice(0, 300)}`).toBeLessThan(500);
          if (response.status >= 400) {
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = text;
            }
            expect(envelopeSchema.safeParse(parsed).success, `${label}: ${text.slice(0, 300)}`).toBe(true);
            expect(await writes(), `${label} wrote something while answering ${response.status}`).toBe(
              before,
            );
          }
        }),
        { numRuns: runs, endOnFailure: true },
      );
    }
  });
});
