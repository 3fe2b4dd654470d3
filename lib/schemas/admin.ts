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
  /** The pool's warm instances seen listed (not yet any sandbox's: left alone). */
  warm: z.int(),
  /** Ready warm instances whose instance had disappeared: their records removed, refilled next. */
  warmLost: z.int(),
});

export const reconcileReportSchema = z.object({
  ran: z.boolean(),
  pools: z.array(poolReconcileReportSchema),
  durationMs: z.int(),
});
