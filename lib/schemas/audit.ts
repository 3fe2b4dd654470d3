import * as z from 'zod';
import { idPattern } from '../ids.ts';

export const auditEventSchema = z.object({
  orgId: z.string(),
  seq: z.int(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  target: z.string(),
  details: z.record(z.string(), z.unknown()),
  prevHash: z.string(),
  hash: z.string(),
});

export const auditVerifyQuerySchema = z.strictObject({
  orgId: z.string().regex(idPattern('org'), 'an org id (org_...)').optional(),
});

export const auditVerificationSchema = z.object({
  ok: z.boolean(),
  checked: z.int(),
  orgId: z.string().optional(),
  firstBroken: z.object({ seq: z.int(), reason: z.string() }).optional(),
});
