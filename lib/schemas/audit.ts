import { idPattern } from '../ids.ts';
import * as z from '../zod.ts';

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
  orgId: z.optional(z.string().check(z.regex(idPattern('org'), 'an org id (org_...)'))),
});

export const auditVerificationSchema = z.object({
  ok: z.boolean(),
  checked: z.int(),
  orgId: z.optional(z.string()),
  firstBroken: z.optional(z.object({ seq: z.int(), reason: z.string() })),
});
