import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors.ts';
import { isId } from '../ids.ts';
import type { ReadAlong, ReadAlongResult, TenancyStore } from '../store/tenancy/port.ts';

export type Principal =
  /**
   * The bootstrap admin key (keyId `admin`, `orgId` null: the operator of the installation), or an
   * admin-role key: the administrator of its own organization only (`orgId`).
   */
  | { kind: 'admin'; keyId: string; orgId: string | null }
  | { kind: 'org'; orgId: string; keyId: string; role: 'admin' | 'member'; projectId: string | null }
  /** No key was presented: what routes that need none (health, the OpenAPI document) are handed. */
  | { kind: 'anonymous' };

/** A caller acting for one organization (and maybe one project of it). */
export type OrgPrincipal = Extract<Principal, { kind: 'org' }>;

/** A caller on the admin routes: the operator (`orgId` null) or one organization's administrator. */
export type AdminPrincipal = Extract<Principal, { kind: 'admin' }>;

/**
 * An organization's administrator reaches its own org only; another org is 404 to it, as it is to any
 * tenant (its existence is not told).
 */
export function assertAdministers(
  principal: AdminPrincipal,
  orgId: string,
  what: 'org' | 'key' = 'org',
  id = orgId,
): void {
  if (principal.orgId !== null && principal.orgId !== orgId) throw errors.notFound(what, id);
}

/** An org key is `<key id>.<secret>`: the id finds the record in O(1), the secret proves possession. */
export function mintKeySecret(keyId: string): { key: string; secretHash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { key: `${keyId}.${secret}`, secretHash: sha256Hex(secret) };
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two secrets of any length (hashing first equalises the lengths). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

function hashesEqual(hexA: string, hexB: string): boolean {
  const a = Buffer.from(hexA, 'hex');
  const b = Buffer.from(hexB, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A key in E2B's shape: `e2b_` and the hex of the key's bytes. E2B SDKs 2.27 to 2.45 (and the Python SDK
 * by default) refuse any other shape before they send anything; this one is the same key, decoded on
 * arrival wherever a key is accepted.
 */
export function e2bKeyForm(key: string): string {
  return `e2b_${Buffer.from(key, 'utf8').toString('hex')}`;
}

/** The key an E2B-shaped one stands for; any other token as it is. */
export function fromE2bKeyForm(token: string): string {
  const hex = /^e2b_((?:[0-9a-f]{2})+)$/.exec(token)?.[1];
  return hex === undefined ? token : Buffer.from(hex, 'hex').toString('utf8');
}

/**
 * A sandbox's data-plane token (E2B's `envdAccessToken`): the key's id and an HMAC of the sandbox id keyed
 * by the hash of the key's secret, so it is checked against the key record every request reads anyway,
 * names one sandbox only, is never the API key, and ends with the key (revoked or rotated).
 */
export function sandboxToken(apiKey: string, sandboxId: string): string | undefined {
  const key = fromE2bKeyForm(apiKey);
  const dot = key.indexOf('.');
  if (dot <= 0) return undefined;
  return `${key.slice(0, dot)}.${sandboxTokenMac(sha256Hex(key.slice(dot + 1)), sandboxId)}`;
}

function sandboxTokenMac(secretHash: string, sandboxId: string): string {
  return createHmac('sha256', secretHash).update(`envd/${sandboxId}`).digest('base64url');
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}

/** What a request reads with its key, in the key's org (the router asks per route). */
export type WantedAlong = Omit<ReadAlong, 'orgId'>;

export interface Authenticator {
  /**
   * The caller, and what `along` asks for read in the same round trip as the key where this container
   * already knows the key's org (otherwise `along` comes back empty and the caller reads on its own).
   */
  authenticate(
    authorization: string | undefined,
    along?: WantedAlong,
  ): Promise<{ principal: Principal; along: ReadAlongResult }>;
  /** The caller a sandbox token (`sandboxToken`) stands for, only for the sandbox it names. */
  authenticateSandbox(token: string | undefined, sandboxId: string): Promise<OrgPrincipal>;
  /**
   * The caller behind a URL signed with one of the sandbox's tokens, which the URL does not carry (E2B's
   * signed file URLs hold only a hash over it): each active key of the sandbox's org is tried, up to
   * maxSigningKeys, for the token `accepts`.
   */
  authenticateSigned(
    orgId: string,
    sandboxId: string,
    accepts: (token: string) => boolean,
  ): Promise<OrgPrincipal>;
}

/** The org keys a signed URL is checked against, at most: an org with more should sign with a recent one. */
export const maxSigningKeys = 200;

/** The caller an org key stands for (its role is not admin). */
function orgPrincipalOf(record: {
  id: string;
  orgId: string;
  role: OrgPrincipal['role'];
  projectId: string | null;
}): OrgPrincipal {
  return {
    kind: 'org',
    orgId: record.orgId,
    keyId: record.id,
    role: record.role,
    projectId: record.projectId,
  };
}

/** Keys whose org this container remembers; past it, the memory starts over (a miss costs a round trip). */
const rememberedKeys = 10_000;

/**
 * Resolves a bearer key to a principal. Every failure is the same 401 so a caller cannot probe which
 * key ids exist; the admin key is compared in constant time.
 *
 * The key item is read on every request, so a revocation takes effect at once in every container. What
 * this container remembers is only which org a key id belongs to, which never changes: with it, the key
 * and the records its request needs next (the sandbox, the org) are read in one round trip.
 */
export function createAuthenticator(store: TenancyStore, adminKey: string | undefined): Authenticator {
  const orgOfKey = new Map<string, string>();
  const nothing: ReadAlongResult = {};
  return {
    async authenticateSandbox(token, sandboxId) {
      const dot = token?.indexOf('.') ?? -1;
      const keyId = token === undefined || dot <= 0 ? '' : token.slice(0, dot);
      if (token === undefined || !isId('key', keyId))
        throw errors.unauthenticated('the access token is not valid');
      const record = await store.getKey(keyId);
      const mac = record === undefined ? '' : sandboxTokenMac(record.secretHash, sandboxId);
      if (record === undefined || !secretsEqual(token.slice(dot + 1), mac)) {
        throw errors.unauthenticated('the access token is not valid for this sandbox');
      }
      if (record.revokedAt !== null)
        throw errors.unauthenticated('the API key behind this access token has been revoked');
      if (record.role === 'admin') throw errors.unauthenticated('the access token is not valid');
      return orgPrincipalOf(record);
    },
    async authenticateSigned(orgId, sandboxId, accepts) {
      let cursor: string | undefined;
      let tried = 0;
      do {
        const page = await store.listKeys(orgId, { cursor, limit: 100 });
        for (const record of page.items) {
          if (record.revokedAt !== null || record.role === 'admin') continue;
          if (accepts(`${record.id}.${sandboxTokenMac(record.secretHash, sandboxId)}`))
            return orgPrincipalOf(record);
          tried += 1;
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined && tried < maxSigningKeys);
      throw errors.unauthenticated('the signature is not valid for this sandbox and path');
    },
    async authenticate(authorization, along) {
      const presented = bearerToken(authorization);
      if (presented === undefined) throw errors.unauthenticated();
      const token = fromE2bKeyForm(presented);
      if (adminKey !== undefined && adminKey !== '' && secretsEqual(token, adminKey))
        return { principal: { kind: 'admin', keyId: 'admin', orgId: null }, along: nothing };
      const dot = token.indexOf('.');
      const keyId = dot > 0 ? token.slice(0, dot) : '';
      if (!isId('key', keyId)) throw errors.unauthenticated('the API key is not valid');
      const knownOrg = orgOfKey.get(keyId);
      const read =
        knownOrg !== undefined && along !== undefined && Object.keys(along).length > 0
          ? await store.getKeyWith(keyId, { ...along, orgId: knownOrg })
          : { key: await store.getKey(keyId), along: nothing };
      const record = read.key;
      const secretHash = sha256Hex(token.slice(dot + 1));
      if (record === undefined || !hashesEqual(record.secretHash, secretHash)) {
        throw errors.unauthenticated('the API key is not valid');
      }
      if (record.revokedAt !== null) throw errors.unauthenticated('the API key has been revoked');
      if (knownOrg === undefined) {
        if (orgOfKey.size >= rememberedKeys) orgOfKey.clear();
        orgOfKey.set(keyId, record.orgId);
      }
      // An admin-role key administers the organization it was minted under, and only that one: the admin
      // routes about its org; the installation's (orgs, pools, policy, quotas) are the operator's.
      if (record.role === 'admin')
        return { principal: { kind: 'admin', keyId: record.id, orgId: record.orgId }, along: nothing };
      return {
        principal: orgPrincipalOf(record),
        // Read in the org remembered for this key id, which is the key's own: ids are never reused.
        along: knownOrg === record.orgId ? read.along : nothing,
      };
    },
  };
}
