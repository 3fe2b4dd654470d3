import { monotonicFactory } from 'ulid';

/** Prefixes of every id Differently mints; the ULID after the underscore sorts by creation time. */
export const idPrefixes = {
  sandbox: 'sbx',
  snapshot: 'snp',
  org: 'org',
  project: 'prj',
  key: 'key',
  installation: 'inst',
  webhook: 'whk',
} as const;

export type IdKind = keyof typeof idPrefixes;

const nextUlid = monotonicFactory();
const ulidPattern = '[0-9A-HJKMNP-TV-Z]{26}';

export function newId(kind: IdKind): string {
  return `${idPrefixes[kind]}_${nextUlid()}`;
}

/** A bare ULID for internal names that are no API id (outbox records, linker names): time-ordered. */
export function newUlid(): string {
  return nextUlid();
}

const patterns = Object.fromEntries(
  Object.entries(idPrefixes).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${ulidPattern}$`)]),
) as Record<IdKind, RegExp>;

export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}

export function idPattern(kind: IdKind): RegExp {
  return patterns[kind];
}
