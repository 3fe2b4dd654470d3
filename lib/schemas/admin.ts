import * as z from '../zod.ts';

export const poolReconcileReportSchema = z.object({
  pool: z.string(),
  skipped: z.optional(z.string()),
  listed: z.int(),
  orphansDeleted: z.int(),
  duplicatesDeleted: z.int(),
  adopted: z.int(),
  requeued: z.int(),
  failed: z.int(),
  stopped: z.int(),
  inGrace: z.int(),
});

export const reconcileReportSchema = z.object({
  ran: z.boolean(),
  pools: z.array(poolReconcileReportSchema),
  durationMs: z.int(),
});
