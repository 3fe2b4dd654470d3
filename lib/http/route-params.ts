import * as z from 'zod';
import { idPattern } from '../ids.ts';

export const orgParams = z.strictObject({ id: z.string().regex(idPattern('org'), 'an org id (org_...)') });
export const keyParams = z.strictObject({ id: z.string().regex(idPattern('key'), 'a key id (key_...)') });
/** Error answers in the route table (and so in the OpenAPI document): the one envelope. */
export { errorEnvelopeSchema as errorSchema } from '../schemas/common.ts';

export const sandboxParams = z.strictObject({
  id: z.string().regex(idPattern('sandbox'), 'a sandbox id (sbx_...)'),
});
