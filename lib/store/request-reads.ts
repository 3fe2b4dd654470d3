import { AsyncLocalStorage } from 'node:async_hooks';
import type { OrgRecord, SandboxRecord } from './records.ts';
import type { ReadAlong, ReadAlongResult } from './tenancy/port.ts';

/**
 * What one request read along with its key (the store's `getKeyWith`, one round trip): the services
 * take each record from here instead of reading it again, without it being handed through them. Each is
 * given once: the first read of the request takes it, and any later read (a retry after a conflict, a
 * read after the request's own write) goes to the store, so nothing the request changed is seen stale.
 */
class RequestReads {
  readonly #asked: ReadAlong;
  readonly #read: ReadAlongResult;
  readonly #taken = new Set<keyof ReadAlongResult>();

  constructor(asked: ReadAlong, read: ReadAlongResult) {
    this.#asked = asked;
    this.#read = read;
  }

  take<K extends keyof ReadAlongResult>(key: K, orgId: string): ReadAlongResult[K] | undefined {
    if (orgId !== this.#asked.orgId || this.#taken.has(key)) return undefined;
    const value = this.#read[key];
    if (value !== undefined) this.#taken.add(key);
    return value;
  }

  /** The sandbox read along, when it is the one asked for (null: it does not exist). */
  sandbox(orgId: string, id: string): SandboxRecord | null | undefined {
    return this.#asked.sandboxId === id ? this.take('sandbox', orgId) : undefined;
  }
}

const current = new AsyncLocalStorage<RequestReads>();

/** Runs a request's handler with what was read along with its key (`asked`: what, in which org). */
export function withReadAlong<T>(asked: ReadAlong, read: ReadAlongResult, run: () => T): T {
  return current.run(new RequestReads(asked, read), run);
}

/**
 * The current request's reads along its key, each given once; outside a request (workers, the E2B
 * facade, MCP tools), or where the route asked for none, every answer is undefined: read the store.
 */
export const readAlong = {
  sandbox(orgId: string, id: string): SandboxRecord | null | undefined {
    return current.getStore()?.sandbox(orgId, id);
  },
  org(orgId: string): OrgRecord | null | undefined {
    return current.getStore()?.take('org', orgId);
  },
  /** The org's count of waiting (queued or provisioning) sandboxes. */
  waiting(orgId: string): number | undefined {
    return current.getStore()?.take('waiting', orgId);
  },
  /** The count of sandboxes of any org waiting on the pools. */
  waitingOnPools(orgId: string): number | undefined {
    return current.getStore()?.take('waitingOnPools', orgId);
  },
  /** The pools' version in the store (null before the first pool or policy change). */
  poolsVersion(orgId: string): string | null | undefined {
    return current.getStore()?.take('poolsVersion', orgId);
  },
};
