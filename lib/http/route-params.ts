import { z } from 'zod';
import { idPattern } from '../ids.ts';

export const orgParams = z.strictObject({ id: z.string().regex(idPattern('org'), 'an org id (org_...)') });
export const keyParams = z.strictObject({ id: z.string().regex(idPattern('key'), 'a key id (key_...)') });
export const errorSchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
});
