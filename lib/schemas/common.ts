import * as z from '../zod.ts';

/** Labels tenants may set; the `differently.dev/` prefix is reserved for the control plane's own stamps. */
export const reservedLabelPrefix = 'differently.dev/';

/**
 * Limits on what a sandbox carries, so every record stays far inside DynamoDB's 400 KB item limit (a
 * refusal here is a 400 naming the limit, never a 500 from the store) and no tenant can make the control
 * plane hold megabytes per sandbox.
 */
export const recordLimits = {
  maxLabels: 64,
  maxEnvVars: 128,
  maxEnvNameLength: 256,
  /** Names and values together, in UTF-8 bytes. */
  maxEnvBytes: 64 * 1024,
} as const;

export const labelsSchema = z
  .record(
    z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(63),
        z.regex(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, 'label keys are letters, digits and . _ / -'),
      ),
    z.string().check(z.maxLength(255)),
  )
  .check(
    z.superRefine((labels, ctx) => {
      if (Object.keys(labels).length > recordLimits.maxLabels) {
        ctx.addIssue({ code: 'custom', message: `at most ${recordLimits.maxLabels} labels` });
      }
      for (const key of Object.keys(labels)) {
        if (key.toLowerCase().startsWith(reservedLabelPrefix)) {
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `labels under the ${reservedLabelPrefix} prefix are set by Differently, not by tenants`,
          });
        }
      }
    }),
  );

export const envSchema = z
  .record(
    z
      .string()
      .check(
        z.maxLength(recordLimits.maxEnvNameLength),
        z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'),
      ),
    // NUL ends a C string: the value a command received would not be the one sent (and a jail's options
    // travel NUL-separated).
    z.string().check(
      z.maxLength(32 * 1024),
      z.refine((value) => !value.includes('\0'), 'environment variable values cannot contain NUL bytes'),
    ),
  )
  .check(
    z.superRefine((env, ctx) => {
      const entries = Object.entries(env);
      if (entries.length > recordLimits.maxEnvVars) {
        ctx.addIssue({ code: 'custom', message: `at most ${recordLimits.maxEnvVars} environment variables` });
      }
      const bytes = entries.reduce(
        (sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value),
        0,
      );
      if (bytes > recordLimits.maxEnvBytes) {
        ctx.addIssue({
          code: 'custom',
          message: `environment variables may hold at most ${recordLimits.maxEnvBytes} bytes in all (${bytes} sent)`,
        });
      }
    }),
  );

export const listQuerySchema = z.strictObject({
  cursor: z.optional(z.string().check(z.maxLength(512))),
  limit: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(100)), 50),
});

export function pageOf<T extends z.ZodMiniType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.nullable(z.string()) });
}

/**
 * The one error envelope: every error answer of the API (the router's, the Lambda edge's, API Gateway's
 * own gateway responses) and what the SDK reads. Liberal in `details` (absent reads as {}), so a client
 * keeps working when a proxy in between answers with less.
 */
export const errorEnvelopeSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z._default(z.record(z.string(), z.unknown()), {}),
  }),
});
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;
