import { DifferentlyClient } from '../../sdk/client.ts';
import { apiEndpoint } from './endpoint.ts';

/**
 * The signed-in key: in session storage only (gone when the tab closes, never in a URL, a cookie or
 * local storage), sent as the API's bearer token by the SDK's client.
 */
const keyItem = 'differently.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(keyItem);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(keyItem, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(keyItem);
}

export function clientFor(apiKey: string): DifferentlyClient {
  // The console's own reads are polled: one attempt each, and the next poll is the retry.
  return new DifferentlyClient({ endpoint: apiEndpoint(window.location), apiKey, attempts: 2 });
}

/**
 * Who the key is, as the API answers: an organization's member key (acts for the org: sandboxes, usage,
 * audit events, trust report), an organization's admin-role key (administers that org only: keys,
 * budgets, webhooks, the chain's verification) or the bootstrap admin key (the installation).
 */
export type Identity =
  | { kind: 'org'; orgId: string }
  | { kind: 'org-admin'; orgId: string }
  | { kind: 'operator' };

/** Reads what the key may do from the API itself: the console never guesses from the key's text. */
export async function identify(client: DifferentlyClient): Promise<Identity> {
  try {
    return { kind: 'org', orgId: (await client.usage()).orgId };
  } catch (error) {
    if (!forbidden(error)) throw error;
  }
  // An admin key: the installation's routes answer the bootstrap key only.
  try {
    await client.admin.listPools();
    return { kind: 'operator' };
  } catch (error) {
    if (!forbidden(error)) throw error;
  }
  const own = (await client.admin.listOrgs({ limit: 1 })).items[0];
  if (own === undefined) throw new Error('this admin key administers no organization');
  return { kind: 'org-admin', orgId: own.id };
}

function forbidden(error: unknown): boolean {
  return (error as { status?: unknown }).status === 403;
}
