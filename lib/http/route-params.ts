import * as z from 'zod';
import { errors } from '../errors.ts';
import { idPattern, isId } from '../ids.ts';
import type { WantedAlong } from '../tenancy/auth.ts';

export const orgParams = z.strictObject({ id: z.string().regex(idPattern('org'), 'an org id (org_...)') });
export const keyParams = z.strictObject({ id: z.string().regex(idPattern('key'), 'a key id (key_...)') });
/** Error answers in the route table (and so in the OpenAPI document): the one envelope. */
export { errorEnvelopeSchema as errorSchema } from '../schemas/common.ts';

export const sandboxParams = z.strictObject({
  id: z.string().regex(idPattern('sandbox'), 'a sandbox id (sbx_...)'),
});

/** A route on one sandbox reads it with the caller's key (one round trip), when the path holds a sandbox id. */
export function sandboxAlong(raw: Record<string, string>): WantedAlong {
  const id = raw.id;
  return id !== undefined && isId('sandbox', id) ? { sandboxId: id } : {};
}

/** `team=a,tier=gold` -> { team: 'a', tier: 'gold' } */
export function parseLabelFilter(filter: string | undefined): Record<string, string> | undefined {
  if (filter === undefined) return undefined;
  const labels: Record<string, string> = {};
  for (const pair of filter.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw errors.invalidRequest(`label filter ${pair} is not key=value`, { field: 'label' });
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}
