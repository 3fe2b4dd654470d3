import { errors } from '../errors.ts';
import { newId } from '../ids.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import type {
  Page,
  PageRequest,
  SandboxFilter,
  SandboxPatch,
  SandboxUpdateCondition,
  Store,
} from './port.ts';
import type { KeyRecord, OrgRecord, SandboxRecord } from './records.ts';

/**
 * The in-memory store for dev mode and unit tests. Records are copied in and out so callers can never
 * mutate stored state by accident, which keeps its behaviour the same as a remote store's.
 */
export class MemoryStore implements Store {
  readonly #installation = newId('installation');
  readonly #orgs = new Map<string, OrgRecord>();
  readonly #keys = new Map<string, KeyRecord>();
  readonly #sandboxes = new Map<string, SandboxRecord>();

  async installation(): Promise<string> {
    return this.#installation;
  }

  async createOrg(org: OrgRecord): Promise<void> {
    insertNew(this.#orgs, org.id, org, 'org');
  }

  async getOrg(id: string): Promise<OrgRecord | undefined> {
    return copy(this.#orgs.get(id));
  }

  async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
    return paginate([...this.#orgs.values()], page);
  }

  async createKey(key: KeyRecord): Promise<void> {
    insertNew(this.#keys, key.id, key, 'key');
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    return copy(this.#keys.get(id));
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
    return paginate(
      [...this.#keys.values()].filter((key) => key.orgId === orgId),
      page,
    );
  }

  async revokeKey(id: string, at: string): Promise<KeyRecord> {
    const key = this.#keys.get(id);
    if (key === undefined) throw errors.notFound('key', id);
    const revoked = { ...key, revokedAt: key.revokedAt ?? at };
    this.#keys.set(id, revoked);
    return structuredClone(revoked);
  }

  async createSandbox(sandbox: SandboxRecord): Promise<void> {
    insertNew(this.#sandboxes, sandbox.id, sandbox, 'sandbox');
  }

  async getSandbox(id: string): Promise<SandboxRecord | undefined> {
    return copy(this.#sandboxes.get(id));
  }

  async listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>> {
    const matches = [...this.#sandboxes.values()].filter(
      (sandbox) =>
        sandbox.orgId === orgId &&
        (filter.status === undefined || sandbox.status === filter.status) &&
        (filter.projectId === undefined || sandbox.projectId === filter.projectId) &&
        Object.entries(filter.labels ?? {}).every(([key, value]) => sandbox.labels[key] === value),
    );
    return paginate(matches, page);
  }

  async updateSandbox(
    id: string,
    condition: SandboxUpdateCondition,
    patch: SandboxPatch,
  ): Promise<SandboxRecord> {
    const current = this.#sandboxes.get(id);
    if (current === undefined) throw errors.notFound('sandbox', id);
    if (current.version !== condition.version || current.status !== condition.status) {
      throw errors.conflict(`sandbox ${id} changed since it was read`, {
        expected: condition,
        actual: { version: current.version, status: current.status },
      });
    }
    const next: SandboxRecord = { ...current, ...structuredClone(patch), version: current.version + 1 };
    this.#sandboxes.set(id, next);
    return structuredClone(next);
  }
}

function copy<T>(value: T | undefined): T | undefined {
  return value === undefined ? undefined : structuredClone(value);
}

function insertNew<T>(map: Map<string, T>, id: string, value: T, kind: string): void {
  if (map.has(id)) throw errors.conflict(`${kind} ${id} already exists`, { kind, id });
  map.set(id, structuredClone(value));
}

/** Ids are ULID-prefixed, so id order is creation order. */
function paginate<T extends { id: string }>(items: T[], page: PageRequest): Page<T> {
  const after = decodeCursor(page.cursor);
  const sorted = items
    .filter((item) => after === undefined || item.id > after)
    .sort((a, b) => a.id.localeCompare(b.id));
  const slice = sorted.slice(0, page.limit);
  const last = slice.at(-1);
  return {
    items: slice.map((item) => structuredClone(item)),
    nextCursor: sorted.length > page.limit && last !== undefined ? encodeCursor(last.id) : null,
  };
}
