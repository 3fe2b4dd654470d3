import { z } from 'zod';

/** Labels tenants may set; the `differently.dev/` prefix is reserved for the control plane's own stamps. */
export const reservedLabelPrefix = 'differently.dev/';

export const labelsSchema = z
  .record(
    z
      .string()
      .min(1)
      .max(63)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, 'label keys are letters, digits and . _ / -'),
    z.string().max(255),
  )
  .superRefine((labels, ctx) => {
    for (const key of Object.keys(labels)) {
      if (key.toLowerCase().startsWith(reservedLabelPrefix)) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `labels under the ${reservedLabelPrefix} prefix are set by Differently, not by tenants`,
        });
      }
    }
  });

export const envSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'),
  z.string().max(32 * 1024),
);

export const listQuerySchema = z.strictObject({
  cursor: z.string().max(512).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}
