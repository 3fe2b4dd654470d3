import { idPattern, isId } from '../ids.ts';
import type { WantedAlong } from '../tenancy/auth.ts';
import * as z from '../zod.ts';

export const orgParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('org'), 'an org id (org_...)')),
});
export const keyParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('key'), 'a key id (key_...)')),
});
/** Error answers in the route table (and so in the OpenAPI document): the one envelope. */
export { errorEnvelopeSchema as errorSchema } from '../schemas/common.ts';

export const sandboxParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('sandbox'), 'a sandbox id (sbx_...)')),
});

/** A route on one sandbox reads it with the caller's key (one round trip), when the path holds a sandbox id. */
export function sandboxAlong(raw: Record<string, string>): WantedAlong {
  const id = raw.id;
  return id !== undefined && isId('sandbox', id) ? { sandboxId: id } : {};
}
